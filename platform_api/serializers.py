"""Validation and representation of platform core resources. Serializers never save."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers

from chains.fields import AddressField, SupportedChainIdField, TokenAmountField
from core.fields import EpochMillisField, StrictCharField
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


class ApiKeyCreateSerializer(serializers.Serializer):
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


class QuickPayCreateSerializer(serializers.Serializer):
    amount = TokenAmountField(help_text="Amount in the token's smallest unit, as a string of digits.")
    token_address = AddressField()
    chain_id = SupportedChainIdField()
    recipient_address = AddressField()


class QuickPaymentSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Quick payment id, prefix `qp_`.")
    status = serializers.CharField(help_text="`awaiting_payment`, then `paid` or `expired`.")
    amount = TokenAmountField()
    token_address = serializers.CharField()
    chain_id = serializers.IntegerField()
    recipient_address = serializers.CharField()
    deposit_address = serializers.CharField(
        help_text="Send exactly `amount` of `token_address` on `chain_id` to this service-owned address."
    )
    amount_received = TokenAmountField(
        allow_zero=True,
        help_text="What confirmed deposits of the token brought so far (partial payments add up).",
    )
    expires_at = EpochMillisField(help_text="Pay before this time (ms since epoch).")
    paid_at = EpochMillisField(allow_null=True, help_text="When confirmed deposits reached `amount`.")
    tx_hash = serializers.CharField(allow_null=True, help_text="The deposit that completed the payment.")
    created_at = EpochMillisField()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["tx_hash"] = data["tx_hash"] or None
        return data

    def get_object(self, _obj) -> str:
        return "quick_payment"
