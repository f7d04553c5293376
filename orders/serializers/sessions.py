from __future__ import annotations

from rest_framework import serializers

from orders.serializers.common import (
    JsonObjectField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    TemplateUrlField,
)


class CheckoutSessionCreateSerializer(StrictSerializer):
    success_url = TemplateUrlField(required=False, allow_null=True)
    cancel_url = TemplateUrlField(required=False, allow_null=True)
    metadata = JsonObjectField(required=False)
    client_reference_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)
    expires_in = StrictIntegerField(required=False, min_value=300, max_value=86400)


class CheckoutSessionSerializer(serializers.Serializer):
    """The session as the contract shows it (plus the client reference it was created with)."""

    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=["open", "processing", "complete", "expired"])
    success_url = serializers.CharField(allow_null=True)
    cancel_url = serializers.CharField(allow_null=True)
    metadata = serializers.DictField()
    client_reference_id = serializers.CharField(allow_null=True)
    expires_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
