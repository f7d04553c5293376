from __future__ import annotations

from rest_framework import serializers

from core.fields import EpochMillisField, StrictCharField, StrictSerializer
from webhooks.events import EVENT_TYPES
from webhooks.urlguard import UnsafeWebhookUrl, validate_webhook_url

EVENT_CHOICES = [*EVENT_TYPES, "*"]


class WebhookUrlField(StrictCharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 2048)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            validate_webhook_url(value)
        except UnsafeWebhookUrl as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value


class EventListField(serializers.ListField):
    def __init__(self, **kwargs):
        super().__init__(
            child=serializers.ChoiceField(choices=EVENT_CHOICES),
            allow_empty=False,
            min_length=1,
            max_length=20,
            **kwargs,
        )

    def to_internal_value(self, data):
        events = super().to_internal_value(data)
        if "*" in events and len(events) > 1:
            raise serializers.ValidationError('Use ["*"] alone to subscribe to every event.')
        return sorted(set(events), key=events.index)


class WebhookCreateSerializer(StrictSerializer):
    url = WebhookUrlField()
    events = EventListField()
    description = StrictCharField(required=False, allow_blank=True, max_length=500)


class WebhookUpdateSerializer(StrictSerializer):
    an_update = True
    url = WebhookUrlField(required=False)
    events = EventListField(required=False)
    is_active = serializers.BooleanField(required=False)

    def to_internal_value(self, data):
        if (
            isinstance(data, dict)
            and isinstance(data.get("is_active"), str | int)
            and not isinstance(data.get("is_active"), bool)
        ):
            raise serializers.ValidationError({"is_active": ["Must be true or false."]})
        return super().to_internal_value(data)


class WebhookSerializer(serializers.Serializer):
    id = serializers.CharField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField()
    is_active = serializers.BooleanField()
    success_count = serializers.IntegerField()
    failure_count = serializers.IntegerField()
    last_triggered_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.SerializerMethodField(help_text="whsec_...; returned only on creation.")

    def get_secret(self, _obj) -> str:
        return self.context["secret"]


class DeliverySerializer(serializers.Serializer):
    id = serializers.CharField()
    event_type = serializers.CharField()
    status = serializers.CharField()
    response_code = serializers.IntegerField(allow_null=True)
    response_time_ms = serializers.IntegerField(allow_null=True)
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()


# --- webhook events (merchant resources: raw objects, the list envelope, times in ms) --------------------------


class WebhookEventDeliverySerializer(serializers.Serializer):
    id = serializers.CharField(help_text="`del_…`: one event to one endpoint; a resend is a new delivery.")
    endpoint = serializers.CharField(source="endpoint_id", help_text="`wh_…`")
    status = serializers.CharField(help_text="`pending`, `success` or `failed`.")
    attempts = serializers.IntegerField()
    response_code = serializers.IntegerField(allow_null=True, help_text="Of the last attempt.")
    created_at = EpochMillisField()


class WebhookAttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    response_code = serializers.IntegerField(allow_null=True)
    response_time_ms = serializers.IntegerField(allow_null=True)
    error = serializers.CharField()
    manual = serializers.BooleanField(help_text="Made by a retry or a resend from the API or the dashboard.")
    created_at = EpochMillisField()


class WebhookEventDeliveryDetailSerializer(WebhookEventDeliverySerializer):
    body = serializers.CharField(help_text="The exact bytes sent (and signed) on every attempt.")
    attempt_log = WebhookAttemptSerializer(many=True, help_text="Every attempt, first to last.")


class WebhookEventSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="`whe_…`: every delivery's Standard Webhooks `webhook-id`.")
    type = serializers.CharField(source="event_type")
    data = serializers.JSONField(help_text="The `data` of the body delivered.")
    livemode = serializers.BooleanField(
        help_text="False: a test-mode organization's event (`svc_test_` keys)."
    )
    created_at = EpochMillisField()
    deliveries = WebhookEventDeliverySerializer(many=True)

    def get_object(self, _event) -> str:
        return "webhook_event"


class WebhookEventDetailSerializer(WebhookEventSerializer):
    deliveries = WebhookEventDeliveryDetailSerializer(many=True)


class WebhookEventResendSerializer(serializers.Serializer):
    endpoint = StrictCharField(
        required=False,
        max_length=64,
        help_text="`wh_…`: only to this endpoint; default every endpoint it went to.",
    )
