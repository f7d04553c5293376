"""Validation of POST /orders and POST /orders/quote, one serializer per order type."""

from __future__ import annotations

import json

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from chains.fields import PayeeAddressField, SupportedChainIdField
from chains.models import Token
from chains.tokens import tokens_by_chain_and_address
from orders.models import Order
from orders.providers import token_shape
from orders.serializers.common import (
    CLIENT_REFERENCE_RE,
    AddressField,
    HexDataField,
    JsonObjectField,
    StrictCharField,
    StrictIntegerField,
    TokenAmountField,
    TokenShapeSerializer,
)

ONRAMP_VENDORS = ["vendorA", "vendorB", "vendorB-web2", "none"]
TRADE_TYPES = ["EXACT_INPUT", "EXACT_OUTPUT"]


ChainIdField = SupportedChainIdField


def not_zero_address(value: str) -> str:
    if int(value, 16) == 0:
        raise serializers.ValidationError(
            "Must not be the zero address: nothing sent there can be recovered."
        )
    return value


def registry_tokens(attrs: dict) -> dict[str, Token]:
    """The registry's tokens for srcTokenAddress and dstTokenAddress (one query); 400 naming a field it lacks."""
    wanted = {
        "srcTokenAddress": (attrs["srcChain"], attrs["srcTokenAddress"]),
        "dstTokenAddress": (attrs["dstChain"], attrs["dstTokenAddress"]),
    }
    found = tokens_by_chain_and_address(list(wanted.values()))
    known = {field: found.get((chain, address.lower())) for field, (chain, address) in wanted.items()}
    for field, token in known.items():
        if token is None:
            chain, address = wanted[field]
            raise serializers.ValidationError(
                {field: [f"{address} is not a token this service knows on chain {chain}."]}
            )
    return known  # type: ignore[return-value]


class TypeChoiceField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=Order.Type.values, **kwargs)


def order_type_of(data) -> str:
    """Validate `type` alone first: it selects the serializer for everything else."""
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": ["The request body must be a JSON object."]})
    if "type" not in data:
        raise serializers.ValidationError(
            {"type": [serializers.ErrorDetail("This field is required.", code="required")]}
        )
    if data["type"] not in Order.Type.values:
        raise serializers.ValidationError({"type": [f"Must be one of: {', '.join(Order.Type.values)}."]})
    return data["type"]


# --- payloads of POST /orders -------------------------------------------------


class ExpectedDstPayload(serializers.Serializer):
    expectedDstAmount = TokenAmountField(allow_zero=True)


class CustomPayload(serializers.Serializer):
    data = HexDataField()
    to = AddressField()
    spenderAddress = AddressField(required=False)
    amount = TokenAmountField(allow_zero=True)


class CustomExactInPayload(serializers.Serializer):
    amount = TokenAmountField(allow_zero=True)
    expectedDstAmount = TokenAmountField(allow_zero=True)
    functionAbi = StrictCharField(max_length=100_000)
    functionName = StrictCharField(max_length=200)
    functionArgs = serializers.ListField(
        child=StrictCharField(allow_blank=True, max_length=10_000), max_length=64
    )
    to = AddressField()
    spenderAddress = AddressField(required=False)
    value = TokenAmountField(required=False, allow_zero=True)
    action = StrictCharField(required=False, max_length=255)

    def validate_functionAbi(self, value: str) -> str:
        try:
            parsed = json.loads(value)
        except ValueError:
            raise serializers.ValidationError("Must be a JSON-stringified ABI.") from None
        if not isinstance(parsed, list | dict):
            raise serializers.ValidationError("Must be a JSON-stringified ABI (an array or an object).")
        return value


class MintNftPayload(serializers.Serializer):
    contractAddress = AddressField()
    tokenId = StrictIntegerField(min_value=0, allow_null=True)
    contractType = serializers.ChoiceField(choices=["erc721", "erc1155"])
    nftPrice = TokenAmountField(allow_zero=True)


class JoinTournamentPayload(serializers.Serializer):
    contractAddress = AddressField()
    entryPrice = TokenAmountField(allow_zero=True)


class FundTournamentPayload(serializers.Serializer):
    contractAddress = AddressField()
    fundAmount = TokenAmountField()


PAYLOADS = {
    "swap": ExpectedDstPayload,
    "x402_swap": ExpectedDstPayload,
    "duel": ExpectedDstPayload,
    "custom": CustomPayload,
    "custom_exact_in": CustomExactInPayload,
    "mint_nft": MintNftPayload,
    "join_tournament": JoinTournamentPayload,
    "fund_tournament": FundTournamentPayload,
}


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
        if attrs["type"] == "mint_nft" and "nft" not in metadata:
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


class QuoteCommonSerializer(serializers.Serializer):
    type = TypeChoiceField()
    srcChain = ChainIdField()
    dstChain = ChainIdField()
    srcTokenAddress = AddressField()
    dstTokenAddress = AddressField()
    recipientAddress = AddressField(required=False, allow_null=True)
    onrampVendor = serializers.ChoiceField(choices=ONRAMP_VENDORS, required=False, allow_null=True)
    partnerId = StrictCharField(required=False, allow_null=True, max_length=100)

    def validate_recipientAddress(self, value):
        return not_zero_address(value) if value is not None else value

    def validate(self, attrs):
        registry_tokens(attrs)
        return super().validate(attrs)


class SwapQuote(QuoteCommonSerializer):
    tradeType = serializers.ChoiceField(choices=TRADE_TYPES)
    amount = TokenAmountField()


class AmountQuote(QuoteCommonSerializer):
    amount = TokenAmountField()


class CustomQuotePayload(CustomPayload):
    """The order's custom payload, except that a quote needs an amount to price (no zero)."""

    amount = TokenAmountField()


class CustomQuote(QuoteCommonSerializer):
    payload = CustomQuotePayload()


class MintNftQuote(QuoteCommonSerializer):
    contractAddress = AddressField()
    tokenId = StrictIntegerField(min_value=0, allow_null=True, required=False)
    contractType = serializers.ChoiceField(choices=["erc721", "erc1155"])
    price = TokenAmountField()


class JoinTournamentQuote(QuoteCommonSerializer):
    contractAddress = AddressField()
    price = TokenAmountField()


class FundTournamentQuote(QuoteCommonSerializer):
    contractAddress = AddressField()
    fundAmount = TokenAmountField()


QUOTES = {
    "swap": SwapQuote,
    "x402_swap": AmountQuote,
    "duel": AmountQuote,
    "custom_exact_in": AmountQuote,
    "custom": CustomQuote,
    "mint_nft": MintNftQuote,
    "join_tournament": JoinTournamentQuote,
    "fund_tournament": FundTournamentQuote,
}


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


def _camel(order_type: str) -> str:
    return "".join(part.capitalize() for part in order_type.split("_"))


ORDER_REQUEST = PolymorphicProxySerializer(
    component_name="OrderCreate",
    resource_type_field_name="type",
    serializers={
        order_type: _typed(
            OrderCreateSerializer,
            order_type,
            f"{_camel(order_type)}Order",
            payload=payload(),
            **({"metadata": MintNftMetadataSerializer()} if order_type == "mint_nft" else {}),
        )
        for order_type, payload in PAYLOADS.items()
    },
)
QUOTE_REQUEST = PolymorphicProxySerializer(
    component_name="Quote",
    resource_type_field_name="type",
    serializers={
        order_type: _typed(serializer, order_type, f"{_camel(order_type)}Quote")
        for order_type, serializer in QUOTES.items()
    },
)
