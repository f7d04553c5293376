"""Fields and shapes shared by the order interface's request serializers."""

from __future__ import annotations

import json
import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chains.fields import AddressField, TokenAmountField
from core.fields import StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer

__all__ = [
    "CLIENT_REFERENCE_RE",
    "AddressField",
    "HexDataField",
    "JsonObjectField",
    "StrictBooleanField",
    "StrictCharField",
    "StrictIntegerField",
    "StrictSerializer",
    "TemplateUrlField",
    "TokenAmountField",
    "TokenShapeSerializer",
]

CLIENT_REFERENCE_RE = re.compile(r"^[a-zA-Z0-9_-]*$")
TEMPLATE_VARIABLES = ("{SESSION_ID}", "{ORDER_ID}")


class TemplateUrlField(StrictCharField):
    """An absolute http(s) URL, stored unresolved; `{SESSION_ID}` and `{ORDER_ID}` may appear in it."""

    default_error_messages = {
        "url": "Must be an absolute http or https URL; only {{SESSION_ID}} and {{ORDER_ID}} may be templated."
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 2048)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        resolved = value
        for variable in TEMPLATE_VARIABLES:
            resolved = resolved.replace(variable, "00000000-0000-0000-0000-000000000000")
        if "{" in resolved or "}" in resolved:
            self.fail("url")
        try:
            URLValidator(schemes=["http", "https"])(resolved)
        except DjangoValidationError:
            self.fail("url")
        return value


@extend_schema_field({"type": "object", "additionalProperties": True})
class JsonObjectField(serializers.Field):
    """Any JSON object (returned unchanged), bounded in size."""

    default_error_messages = {
        "not_object": "Must be a JSON object.",
        "too_large": "Must serialize to at most {max_bytes} bytes of JSON.",
    }

    def __init__(self, *, max_bytes: int = 8192, **kwargs):
        self.max_bytes = max_bytes
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_object")
        if len(json.dumps(data, separators=(",", ":"))) > self.max_bytes:
            self.fail("too_large", max_bytes=self.max_bytes)
        return data

    def to_representation(self, value):
        return value


class HexDataField(StrictCharField):
    default_error_messages = {"hex": "Must be 0x-prefixed hex bytes."}
    HEX_RE = re.compile(r"^0x(?:[0-9a-fA-F]{2})*$")

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 100_000)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not self.HEX_RE.fullmatch(value):
            self.fail("hex")
        return value


class TokenMetadataSerializer(serializers.Serializer):
    logoURI = StrictCharField(required=False, max_length=500)


class TokenShapeSerializer(serializers.Serializer):
    """The contract's Token object: chainId, address, symbol, name, decimals, metadata."""

    chainId = StrictIntegerField(min_value=1)
    address = AddressField()
    symbol = StrictCharField(max_length=32)
    name = StrictCharField(max_length=100)
    decimals = StrictIntegerField(min_value=0, max_value=255)
    metadata = TokenMetadataSerializer()
