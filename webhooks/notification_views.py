"""Notification settings of the platform interface: GET/PATCH /notifications, POST /notifications/test/email.

In `webhooks` beside the deliveries: an enabled event emails the merchant from
`emit_event`, and the test email goes through the same worker and retries.
"""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.fields import EpochMillisField, StrictBooleanField
from platform_api.api import PlatformAPIView
from platform_api.context import RequestContext
from platform_api.errors import PlatformError
from platform_api.models import Permission
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER
from webhooks import notifications
from webhooks.events import EVENT_TYPES
from webhooks.kinds import EmailKind
from webhooks.models import NotificationSettings
from webhooks.services import notification_settings_get, notification_settings_update


class NotificationSettingsSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `ns_`.")
    email_enabled = serializers.BooleanField()
    email_address = serializers.CharField(allow_null=True)
    enabled_events = serializers.ListField(child=serializers.CharField())
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "notification_settings"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["email_address"] = data["email_address"] or None
        return data


class NotificationUpdateSerializer(serializers.Serializer):
    email_enabled = StrictBooleanField(required=False)
    email_address = serializers.EmailField(max_length=254, required=False, allow_blank=True, allow_null=True)
    enabled_events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_TYPES), required=False, max_length=len(EVENT_TYPES)
    )


class NotificationSettingsView(PlatformAPIView):
    permissions_by_method = {"PATCH": Permission.ADMIN}

    @extend_schema(
        operation_id="notifications_retrieve",
        tags=["Notifications"],
        responses={200: NotificationSettingsSerializer, **ERRORS},
    )
    def get(self, request):
        return Response(
            NotificationSettingsSerializer(notification_settings_get(request.auth.organization)).data
        )

    @extend_schema(
        operation_id="notifications_update",
        tags=["Notifications"],
        request=NotificationUpdateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={200: NotificationSettingsSerializer, **ERRORS},
    )
    def patch(self, request):
        serializer = NotificationUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        row = notification_settings_update(
            ctx=RequestContext.from_request(request),
            organization=request.auth.organization,
            data=serializer.validated_data,
        )
        return Response(NotificationSettingsSerializer(row).data)


class NotificationTestEmailView(PlatformAPIView):
    permissions_by_method = {"POST": Permission.ADMIN}

    @extend_schema(
        operation_id="notifications_test_email",
        tags=["Notifications"],
        request=None,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            202: inline_serializer(
                "NotificationTestEmail",
                {
                    "object": serializers.CharField(),
                    "action": serializers.CharField(),
                    "id": serializers.CharField(),
                    "email_address": serializers.CharField(),
                    "status": serializers.CharField(),
                },
            ),
            **ERRORS,
        },
        description="Queues a test email to `email_address`; a worker sends it (and retries an SMTP failure).",
    )
    def post(self, request):
        request.data  # noqa: B018 - a malformed body is refused like on any endpoint, though none is needed
        row = NotificationSettings.objects.filter(organization=request.auth.organization).first()
        if row is None or not row.email_address:
            raise PlatformError.invalid_field(
                "email_address", "Set 'email_address' first (PATCH /notifications)."
            )
        with transaction.atomic():
            email = notifications.queue(
                organization=request.auth.organization,
                event=None,
                event_type=EmailKind.TEST,
                to=row.email_address,
                subject="Test notification",
                body="This is a test of your payment notifications. It worked.",
            )
        if email is None:  # kept before addresses were checked as they are now
            raise PlatformError.invalid_field(
                "email_address",
                "'email_address' is not a valid email address: set it again (PATCH /notifications).",
            )
        return Response(
            {
                "object": "action",
                "action": "test_email",
                "id": email.id,
                "email_address": row.email_address,
                "status": "queued",
            },
            status=202,
        )
