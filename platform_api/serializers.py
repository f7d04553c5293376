"""Validation and representation of platform core resources. Serializers never save."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers

from core.fields import EpochMillisField, StrictCharField, StrictSerializer
from platform_api.models import Permission

ERROR_TYPES = [
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "not_found_error",
    "rate_limit_error",
    "idempotency_error",
    "api_error",
]
ERROR_CODES = [
    "missing_required_field",
    "invalid_field_value",
    "invalid_address",
    "parameter_unknown",
    "no_updates_provided",
    "invalid_status_transition",
    "duplicate_resource",
    "method_not_allowed",
    "key_missing",
    "key_invalid",
    "key_expired",
    "key_revoked",
    "insufficient_permissions",
    "resource_not_found",
    "rate_limit_exceeded",
    "idempotency_conflict",
    "internal_error",
]


class ErrorDetailSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=ERROR_TYPES)
    code = serializers.ChoiceField(choices=ERROR_CODES)
    message = serializers.CharField(
        help_text="Human-readable; 429 messages include the retry delay in seconds."
    )
    param = serializers.CharField(
        required=False, help_text="The offending request parameter, when there is one."
    )


class ErrorSerializer(serializers.Serializer):
    """The platform error envelope."""

    error = ErrorDetailSerializer()


class ApiKeyCreateSerializer(StrictSerializer):
    name = StrictCharField(max_length=100)
    permissions = serializers.ListField(
        child=serializers.ChoiceField(choices=Permission.values), allow_empty=False, min_length=1
    )
    expires_at = EpochMillisField(required=False, allow_null=True)

    def validate_expires_at(self, value):
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("Must be in the future.")
        return value


class ApiKeySerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField()
    name = serializers.CharField()
    key_prefix = serializers.CharField()
    permissions = serializers.ListField(child=serializers.CharField())
    last_used_at = EpochMillisField(allow_null=True)
    expires_at = EpochMillisField(allow_null=True)
    is_active = serializers.BooleanField()
    created_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "api_key"


class ApiKeyCreatedSerializer(ApiKeySerializer):
    key = serializers.SerializerMethodField(help_text="The full key. Shown only in this response.")

    def get_key(self, _obj) -> str:
        return self.context["raw_key"]


class ApiKeyListSerializer(serializers.Serializer):
    object = serializers.CharField(default="list")
    data = ApiKeySerializer(many=True)
    has_more = serializers.BooleanField()
    total_count = serializers.IntegerField()
    url = serializers.CharField()


class ApiKeyRevokedSerializer(serializers.Serializer):
    object = serializers.CharField(default="api_key_revoked")
    id = serializers.CharField()
    revoked = serializers.BooleanField(default=True)
