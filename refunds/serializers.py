"""The refund's input and its object (platform interface; the webhook events carry the same object)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chains.fields import AddressField, PayeeAddressField, TokenAmountField
from core.fields import EpochMillisField, StrictCharField, StrictIntegerField, StrictSerializer
from refunds.models import Refund
from webhooks.kinds import EventType
from webhooks.payloads import event_body


class RefundDestinationInput(StrictSerializer):
    chain_id = StrictIntegerField(min_value=1, max_value=10**18 - 1)
    token_address = AddressField()
    address = PayeeAddressField()


class RefundCreateSerializer(StrictSerializer):
    transaction = StrictCharField(max_length=64, help_text="The payment: a transaction (`txn_`) or `qp_`.")
    amount = TokenAmountField(
        required=False,
        help_text="In the smallest unit of the token the merchant was paid in; default what is left to refund.",
    )
    reason = serializers.ChoiceField(choices=Refund.Reason.values, required=False)
    metadata = serializers.DictField(required=False)
    destination = RefundDestinationInput(
        required=False,
        help_text="Where the payer receives it; default the chain, token and address they paid from.",
    )


class RefundFundingSerializer(serializers.Serializer):
    method = serializers.CharField(help_text="`balance` or `deposit`.")
    chain_id = serializers.IntegerField()
    token_address = serializers.CharField()
    address = serializers.CharField(
        allow_null=True, help_text="The refund's own deposit address (`deposit`)."
    )
    amount = TokenAmountField(help_text="What to send there.")
    expires_at = EpochMillisField(allow_null=True, help_text="Funding is awaited until then (ms).")


class RefundDestinationSerializer(serializers.Serializer):
    chain_id = serializers.IntegerField()
    token_address = serializers.CharField()
    address = serializers.CharField()
    amount = TokenAmountField(allow_null=True, help_text="What the payer receives, once known.")
    quoted_amount = TokenAmountField(
        allow_null=True,
        help_text="Another chain or token: the least the payer receives as quoted when the refund was made, the "
        "service's fee taken (the final `amount` is quoted again once it is funded, and never below "
        "what the order then guarantees). The amount itself on the same chain and token.",
    )


class RefundTxHashSerializer(serializers.Serializer):
    chain_id = serializers.IntegerField()
    tx_hash = serializers.CharField()
    kind = serializers.CharField(help_text="`funding` or `delivery`.")


class RefundCurrencySerializer(serializers.Serializer):
    chain_id = serializers.IntegerField()
    token_address = serializers.CharField()


@event_body(EventType.REFUND_CREATED, "WebhookRefundCreated")
@event_body(EventType.REFUND_UPDATED, "WebhookRefundUpdated")
@event_body(EventType.REFUND_SUCCEEDED, "WebhookRefundSucceeded")
@event_body(EventType.REFUND_FAILED, "WebhookRefundFailed")
class RefundSerializer(serializers.Serializer):
    """The refund object: the API's answer, and the `data` of every `refund.*` webhook event."""

    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `re_`.")
    transaction = serializers.CharField(source="payment_id", help_text="`txn_…` or `qp_…`.")
    amount = TokenAmountField()
    currency = serializers.SerializerMethodField()
    reason = serializers.CharField(allow_null=True)
    metadata = serializers.JSONField()
    status = serializers.ChoiceField(choices=Refund.Status.values)
    funding = serializers.SerializerMethodField()
    destination = serializers.SerializerMethodField()
    tx_hashes = RefundTxHashSerializer(many=True)
    failure_reason = serializers.CharField(allow_null=True)
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "refund"

    @extend_schema_field(RefundCurrencySerializer)
    def get_currency(self, refund: Refund) -> dict:
        return {"chain_id": refund.chain_id, "token_address": refund.token_address}

    @extend_schema_field(RefundFundingSerializer)
    def get_funding(self, refund: Refund) -> dict:
        return RefundFundingSerializer(
            {
                "method": refund.funding_method,
                "chain_id": refund.chain_id,
                "token_address": refund.token_address,
                "address": refund.funding_address or None,
                "amount": refund.amount,
                "expires_at": refund.expires_at,
            }
        ).data

    @extend_schema_field(RefundDestinationSerializer)
    def get_destination(self, refund: Refund) -> dict:
        return RefundDestinationSerializer(
            {
                "chain_id": refund.destination_chain_id,
                "token_address": refund.destination_token_address,
                "address": refund.destination_address,
                "amount": refund.destination_amount,
                "quoted_amount": refund.destination_amount
                if refund.destination_quoted is None
                else refund.destination_quoted,
            }
        ).data

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["reason"] = data["reason"] or None
        data["failure_reason"] = data["failure_reason"] or None
        return data


class RefundBalanceSerializer(serializers.Serializer):
    chain_id = serializers.IntegerField()
    token_address = serializers.CharField()
    amount = TokenAmountField(allow_zero=True)
    updated_at = EpochMillisField()


class TopUpCreateSerializer(StrictSerializer):
    chain_id = StrictIntegerField(min_value=1, max_value=10**18 - 1)
    token_address = AddressField()


class TopUpSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `rtu_`.")
    chain_id = serializers.IntegerField()
    token_address = serializers.CharField()
    address = serializers.CharField(
        source="deposit_address", help_text="Send the token here: it is credited once the vault holds it."
    )
    credited = TokenAmountField(allow_zero=True, help_text="What reached the refund balance through it.")
    expires_at = EpochMillisField(help_text="What arrives after this goes back to its sender (ms).")
    created_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "refund_balance_top_up"
