"""Serializer fields for chain values: addresses, uint256 token amounts, supported chain ids."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chains import testchains
from chains.evm import ADDRESS_PATTERN, is_address
from core.fields import StrictIntegerField

MAX_UINT256_DIGITS = 78


# An address in the OpenAPI schema: a field's, a query parameter's.
ADDRESS_SCHEMA = {"type": "string", "pattern": ADDRESS_PATTERN, "example": "0x" + "ab" * 20}


@extend_schema_field(ADDRESS_SCHEMA)
class AddressField(serializers.Field):
    """An EVM address: 0x followed by 40 hex characters."""

    default_error_messages = {"invalid_address": "Must be 0x followed by 40 hexadecimal characters."}

    def to_internal_value(self, data):
        if not is_address(data):
            self.fail("invalid_address")
        return data

    def to_representation(self, value):
        return value


class PayeeAddressField(AddressField):
    """An address money is sent to (a recipient, a refund's destination): an EVM address that keeps nothing
    lost (`chains.payees`): not the zero address, a token's contract or one of the service's own."""

    def to_internal_value(self, data):
        from chains.payees import payee_refusal

        value = super().to_internal_value(data)
        if (refusal := payee_refusal(value)) is not None:
            raise serializers.ValidationError(f"This address {refusal}", code="invalid")
        return value


class TokenAmountField(serializers.Field):
    """A token amount in the smallest unit, as a decimal string of digits."""

    default_error_messages = {
        "invalid": "Must be a string of digits (the amount in the token's smallest unit).",
        "positive": "Must be greater than zero.",
        "too_large": "Is larger than a 256-bit amount.",
    }

    def __init__(self, *, allow_zero: bool = False, **kwargs):
        self.allow_zero = allow_zero
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str) or not data.isascii() or not data.isdigit():
            self.fail("invalid")
        if len(data.lstrip("0")) > MAX_UINT256_DIGITS or int(data) >= 2**256:
            self.fail("too_large")
        value = int(data)
        if value == 0 and not self.allow_zero:
            self.fail("positive")
        return value

    def to_representation(self, value):
        return str(int(value))


@extend_schema_field({"type": "integer", "enum": settings.SUPPORTED_CHAIN_IDS})
class SupportedChainIdField(StrictIntegerField):
    """A chain id (JSON integer) among SUPPORTED_CHAIN_IDS; a test chain only, in a request acting for a
    test-mode organization (chains.testchains)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 1)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in settings.SUPPORTED_CHAIN_IDS:
            supported = ", ".join(str(c) for c in settings.SUPPORTED_CHAIN_IDS)
            raise serializers.ValidationError(
                f"Chain {value} is not supported; supported chains: {supported}."
            )
        if testchains.acting_in_test_mode() and (refusal := testchains.test_chain_refusal(value)) is not None:
            raise serializers.ValidationError(refusal)
        return value
