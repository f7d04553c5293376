from __future__ import annotations

from rest_framework import serializers

from chains.fields import AddressField, PayeeAddressField, SupportedChainIdField, TokenAmountField
from core.fields import EpochMillisField, StrictSerializer


class QuickPayCreateSerializer(StrictSerializer):
    amount = TokenAmountField(help_text="Amount in the token's smallest unit, as a string of digits.")
    token_address = AddressField()
    chain_id = SupportedChainIdField()
    recipient_address = PayeeAddressField()


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
