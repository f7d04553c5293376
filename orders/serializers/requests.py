"""What the request serializers of POST /orders and POST /orders/quote share, and what each order type's
shapes (orders.types) build on: the common fields of a quote, the refusal of the zero address, the registry's
tokens, and `type`, validated alone first since it selects the serializer for everything else."""

from __future__ import annotations

from rest_framework import serializers

from chains.fields import SupportedChainIdField
from chains.models import Token
from chains.tokens import tokens_by_chain_and_address
from orders.models import Order
from orders.serializers.common import AddressField, StrictCharField, TokenAmountField

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


class AmountQuote(QuoteCommonSerializer):
    # A quote of a type whose fixed amount is `amount` itself.
    amount = TokenAmountField()
