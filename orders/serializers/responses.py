"""The order interface's response shapes, for the OpenAPI schema.

The bodies themselves are built by `orders.representations` (plain dicts: the
hot paths do not pay for serializers); these classes state those shapes field
by field so that clients can be generated, and `make apicheck` checks every
response against them.
"""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from orders.models import Order, RefundTx, RelayTx
from orders.serializers.common import TokenShapeSerializer

JSON_OBJECT = serializers.DictField


def envelope(name: str, data: serializers.Field) -> serializers.Serializer:
    """`{success, message, data, statusCode}` with a typed `data`."""
    return inline_serializer(
        name=name,
        fields={
            "success": serializers.BooleanField(),
            "message": serializers.CharField(),
            "data": data,
            "statusCode": serializers.IntegerField(),
        },
    )


class OrderOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    type = serializers.ChoiceField(choices=Order.Type.choices)
    status = serializers.ChoiceField(choices=Order.Status.choices)
    recipientAddress = serializers.CharField()
    globalAddress = serializers.CharField(help_text="The deposit address the payer sends to.")
    srcChain = serializers.IntegerField()
    dstChain = serializers.IntegerField()
    srcTokenAddress = serializers.CharField()
    dstTokenAddress = serializers.CharField()
    srcAmount = serializers.CharField(help_text="In the source token's smallest unit.")
    errorDetails = serializers.CharField(allow_null=True)
    createdAt = serializers.IntegerField(help_text="Milliseconds since the epoch.")
    expiredAt = serializers.IntegerField(allow_null=True)
    filledAt = serializers.IntegerField(allow_null=True)
    receivedDepositAt = serializers.IntegerField(allow_null=True)
    creatorAddress = serializers.CharField(allow_null=True)
    refundAddress = serializers.CharField(allow_null=True)
    partnerId = serializers.CharField(allow_null=True)
    clientReferenceId = serializers.CharField(allow_null=True)
    checkoutSessionId = serializers.UUIDField(allow_null=True)
    onrampMetadata = JSON_OBJECT(allow_null=True)
    oneClickBuyUrl = serializers.CharField(allow_null=True)
    vendorBPaymentIntentId = serializers.CharField(allow_null=True)
    settlement = JSON_OBJECT(allow_null=True)
    payload = JSON_OBJECT()
    metadata = JSON_OBJECT()
    fee = JSON_OBJECT(allow_null=True)


class DepositTxOutputSerializer(serializers.Serializer):
    orderId = serializers.UUIDField()
    chain = serializers.IntegerField()
    # The field is named `from` on the wire; a Python attribute cannot be.
    txHash = serializers.CharField()
    amount = serializers.CharField()
    createdAt = serializers.IntegerField()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.CharField(allow_null=True)
        return fields


class RelayTxOutputSerializer(serializers.Serializer):
    orderId = serializers.UUIDField()
    chain = serializers.IntegerField()
    txHash = serializers.CharField()
    status = serializers.ChoiceField(choices=RelayTx.Status.choices)
    createdAt = serializers.IntegerField()


class RefundTxOutputSerializer(RelayTxOutputSerializer):
    amount = serializers.CharField()
    status = serializers.ChoiceField(choices=RefundTx.Status.choices)


class OrderDetailOutputSerializer(serializers.Serializer):
    order = OrderOutputSerializer()
    depositTxs = DepositTxOutputSerializer(many=True)
    relayTxs = RelayTxOutputSerializer(many=True)
    executeTx = JSON_OBJECT(allow_null=True)
    refundTxs = RefundTxOutputSerializer(many=True)
    points = serializers.IntegerField(
        allow_null=True, help_text="Awarded points, once the order is executed."
    )


class AmountOutputSerializer(serializers.Serializer):
    currency = TokenShapeSerializer()
    amount = serializers.CharField()
    amountFormatted = serializers.CharField()
    amountUsd = serializers.CharField()
    minimumAmount = serializers.CharField()


class QuoteOutputSerializer(serializers.Serializer):
    operation = serializers.ChoiceField(choices=["swap", "bridge", "execute"])
    sender = serializers.CharField()
    recipient = serializers.CharField(allow_null=True)
    currencyIn = AmountOutputSerializer()
    currencyOut = AmountOutputSerializer()
    totalImpact = JSON_OBJECT(required=False)
    swapImpact = JSON_OBJECT(required=False)
    rate = serializers.CharField(required=False)
    slippageTolerance = JSON_OBJECT(required=False)
    timeEstimate = serializers.IntegerField(required=False, help_text="Seconds.")
    pointsAmount = serializers.IntegerField()
    pointsMultiplier = serializers.IntegerField()
    fee = JSON_OBJECT(help_text="`standard_fee`, or `vendorBweb2_fee` for card quotes.")


ORDER_RESPONSE = envelope("OrderResponse", OrderOutputSerializer())
ORDER_LIST_RESPONSE = envelope("OrderListResponse", OrderOutputSerializer(many=True))
ORDER_DETAIL_RESPONSE = envelope("OrderDetailResponse", OrderDetailOutputSerializer())
QUOTE_RESPONSE = envelope("QuoteResponse", QuoteOutputSerializer())


class NativeCurrencySerializer(serializers.Serializer):
    symbol = serializers.CharField()
    decimals = serializers.IntegerField()


class ChainOutputSerializer(serializers.Serializer):
    chainId = serializers.IntegerField()
    name = serializers.CharField()
    nativeCurrency = NativeCurrencySerializer()
    confirmations = serializers.IntegerField(help_text="Blocks a deposit must be under before it counts.")
    devnet = serializers.BooleanField(help_text="A local development chain, not a real network.")
    rpcUrl = serializers.CharField(required=False, help_text="Only for devnets: where a wallet can send to.")


CHAIN_LIST_RESPONSE = envelope("ChainListResponse", ChainOutputSerializer(many=True))
TOKEN_LIST_RESPONSE = envelope("TokenListResponse", TokenShapeSerializer(many=True))

RELAY_WEBHOOK_RESPONSE = envelope(
    "RelayWebhookResponse", inline_serializer("RelayWebhookData", {"result": serializers.CharField()})
)
