"""Strict serializer fields for money-moving input: no silent coercion."""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from orders.evm import is_address

MAX_UINT256_DIGITS = 78


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of turning them into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$", "example": "0x" + "ab" * 20})
class AddressField(serializers.Field):
    """An EVM address: 0x followed by 40 hex characters."""

    default_error_messages = {"invalid_address": "Must be 0x followed by 40 hexadecimal characters."}

    def to_internal_value(self, data):
        if not is_address(data):
            self.fail("invalid_address")
        return data

    def to_representation(self, value):
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


class StrictIntegerField(serializers.IntegerField):
    """An integer given as a JSON number; strings, booleans and fractions are refused."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field({"type": "integer", "description": "Milliseconds since the Unix epoch."})
class EpochMillisField(serializers.Field):
    """A datetime shown (and accepted) as milliseconds since the epoch."""

    default_error_messages = {"invalid": "Must be a timestamp in milliseconds since the Unix epoch."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int) or data < 0 or data > 253402300799999:
            self.fail("invalid")
        return datetime.fromtimestamp(data / 1000, tz=UTC)

    def to_representation(self, value):
        return int(value.timestamp() * 1000) if value is not None else None


@extend_schema_field({"type": "integer", "enum": settings.SUPPORTED_CHAIN_IDS})
class SupportedChainIdField(StrictIntegerField):
    """A chain id (JSON integer) among SUPPORTED_CHAIN_IDS."""

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
        return value
