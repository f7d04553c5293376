"""Validation of POST /orders and POST /orders/quote: the order's common fields here, each order type's
payload and quote shapes in its declaration (orders.types), selected by `type`."""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from chains.fields import PayeeAddressField
from orders.providers import token_shape
from orders.serializers.common import (
    CLIENT_REFERENCE_RE,
    AddressField,
    JsonObjectField,
    StrictCharField,
    StrictIntegerField,
    TokenAmountField,
    TokenShapeSerializer,
)
from orders.serializers.requests import (
    ONRAMP_VENDORS,
    ChainIdField,
    TypeChoiceField,
    not_zero_address,
    order_type_of,
    registry_tokens,
)
from orders.types import TYPES, camel

PAYLOADS = {name: kind.payload for name, kind in TYPES.items()}
QUOTES = {name: kind.quote for name, kind in TYPES.items()}

# --- POST /orders ----------------------------------------------------------------


class FingerprintSerializer(serializers.Serializer):
    requestId = StrictCharField(max_length=255)
    visitorId = StrictCharField(max_length=255)


class OnrampSerializer(serializers.Serializer):
    vendor = serializers.ChoiceField(choices=ONRAMP_VENDORS)
    paymentMethod = StrictCharField(max_length=64)
    country = StrictCharField(min_length=2, max_length=2)
    redirectUrl = serializers.URLField(max_length=2048)
    vendorBAmountInCents = StrictIntegerField(required=False, min_value=1)
    fingerprint = FingerprintSerializer(required=False)


NFT_HELP = (
    "Required for mint_nft orders (refused without it), ignored by the others: the NFT as shown to the payer, "
    "any JSON object of at most 8 KB, stored and returned as sent (settlement reads payload, not this), "
    'for example {"name": "Devnet Pass #1", "description": "...", "imageUrl": "https://..."}.'
)


class OrderMetadataSerializer(serializers.Serializer):
    srcToken = TokenShapeSerializer()
    dstToken = TokenShapeSerializer()
    nft = JsonObjectField(required=False, help_text=NFT_HELP)


class MintNftMetadataSerializer(OrderMetadataSerializer):
    """The schema of a mint_nft order's metadata, which the server refuses without `nft`."""

    nft = JsonObjectField(help_text=NFT_HELP)


class OrderCreateSerializer(serializers.Serializer):
    type = TypeChoiceField()
    recipientAddress = AddressField()
    srcChain = ChainIdField()
    dstChain = ChainIdField()
    srcTokenAddress = AddressField()
    dstTokenAddress = AddressField()
    srcAmount = TokenAmountField()
    payload = serializers.DictField()
    metadata = OrderMetadataSerializer()
    partnerId = StrictCharField(required=False, allow_null=True, max_length=100)
    clientReferenceId = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)
    onramp = OnrampSerializer(required=False, allow_null=True)
    creatorAddress = AddressField(required=False, allow_null=True)
    refundAddress = PayeeAddressField(
        required=False,
        allow_null=True,
        help_text="Where a refund goes when the payment's sender cannot be known (a contract wallet's internal "
        "payment on a chain without traces); otherwise refunds go to the sender.",
    )
    checkoutSessionId = serializers.UUIDField(required=False, allow_null=True)
    action = StrictCharField(required=False, allow_null=True, max_length=255)

    def validate_recipientAddress(self, value):
        return not_zero_address(value)

    def validate_refundAddress(self, value):
        return not_zero_address(value) if value else value

    def validate_clientReferenceId(self, value):
        if value and not CLIENT_REFERENCE_RE.fullmatch(value):
            raise serializers.ValidationError("May contain only letters, digits, hyphens and underscores.")
        return value

    def validate(self, attrs):
        payload_serializer = PAYLOADS[attrs["type"]](data=attrs["payload"])
        if not payload_serializer.is_valid():
            raise serializers.ValidationError({"payload": payload_serializer.errors})
        attrs["payload"] = dict(payload_serializer.data)  # amounts back to strings, as stored and shown
        metadata = attrs["metadata"]
        if TYPES[attrs["type"]].needs_nft and "nft" not in metadata:
            raise serializers.ValidationError(
                {"metadata": {"nft": [serializers.ErrorDetail("This field is required.", code="required")]}}
            )
        known = registry_tokens(attrs)
        for side, address_field in (("srcToken", "srcTokenAddress"), ("dstToken", "dstTokenAddress")):
            token, described = known[address_field], metadata[side]
            mismatch = next(
                (
                    f"{name} is {getattr(token, attr)!r} for this token, not {described[name]!r}."
                    for name, attr in (
                        ("chainId", "chain_id"),
                        ("symbol", "symbol"),
                        ("decimals", "decimals"),
                    )
                    if described[name] != getattr(token, attr)
                ),
                None,
            )
            if described["address"].lower() != token.address.lower():
                mismatch = f"Must describe {token.address} on chain {token.chain_id}."
            if mismatch:
                raise serializers.ValidationError({"metadata": {side: [mismatch]}})
            metadata[side] = token_shape(token)  # what is stored and shown is what the service knows
        return attrs


# --- POST /orders/quote -----------------------------------------------------------


def quote_serializer_for(data) -> serializers.Serializer:
    return QUOTES[order_type_of(data)](data=data)


# --- OpenAPI: one request shape per order type, selected by `type` ------------------


def _typed(
    base: type[serializers.Serializer], order_type: str, name: str, **fields
) -> type[serializers.Serializer]:
    """`base` with `type` fixed to `order_type` (and `fields` replaced), for the schema only."""
    type_field = extend_schema_field({"type": "string", "enum": [order_type]})(
        type(f"{name}Type", (TypeChoiceField,), {})
    )
    attrs = {"type": type_field(), **fields}
    return type(name, (base,), attrs)


ORDER_REQUEST = PolymorphicProxySerializer(
    component_name="OrderCreate",
    resource_type_field_name="type",
    serializers={
        order_type: _typed(
            OrderCreateSerializer,
            order_type,
            f"{camel(order_type)}Order",
            payload=payload(),
            **({"metadata": MintNftMetadataSerializer()} if TYPES[order_type].needs_nft else {}),
        )
        for order_type, payload in PAYLOADS.items()
    },
)
QUOTE_REQUEST = PolymorphicProxySerializer(
    component_name="Quote",
    resource_type_field_name="type",
    serializers={
        order_type: _typed(serializer, order_type, f"{camel(order_type)}Quote")
        for order_type, serializer in QUOTES.items()
    },
)
