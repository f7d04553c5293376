"""Strict serializer fields for money-moving input: no silent coercion of types."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

# Control characters (but tab and line feed) and the bidirectional overrides and isolates, which would let a
# merchant's text reorder what the payer's page shows around it (a name that reads as another amount).
UNSAFE_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of turning them into text, and text with
    control characters or bidirectional overrides (UNSAFE_TEXT)."""

    default_error_messages = {"unsafe": "Must not contain control characters or bidirectional overrides."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if UNSAFE_TEXT.search(data):
            self.fail("unsafe")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """An integer given as a JSON number; strings, booleans and fractions are refused."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false; strings such as 'yes' and numbers are refused."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


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


class WholeSerializer(serializers.Serializer):
    """A nested object that is checked whole even inside a partial update.

    DRF passes `partial` down to nested serializers, so a PATCH carrying `{"form_schema": {"fields":
    [{"name": "x"}]}}` would skip the item's required `id`, `type` and `label` and hand the service an
    object it cannot use. A nested value that is sent replaces the stored one, so it is validated as on
    create: by a serializer of its own, not partial.
    """

    def run_validation(self, data=serializers.empty):
        root = self.root
        if data is serializers.empty or root is self or not getattr(root, "partial", False):
            return super().run_validation(data)
        whole = type(self)(data=data, context=self.context)
        whole.is_valid(raise_exception=True)
        return whole.validated_data


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, so a typo is an error and not a silently ignored option.

    An unknown field is reported first; with `unknown_fields_last`, only once the known ones are valid
    (where a missing field says more, as for a config checked against another type's fields).
    """

    unknown_fields_last = False
    # An update (PATCH) that names no field it may change at all is the contract's `no_updates_provided`,
    # which the service says; one that names a field and an unknown one is `parameter_unknown`.
    an_update = False

    def to_internal_value(self, data):
        if not self.unknown_fields_last:
            self._refuse_unknown(data)
        value = super().to_internal_value(data)
        if self.unknown_fields_last:
            self._refuse_unknown(data)
        return value

    def _refuse_unknown(self, data) -> None:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown and self.an_update and not set(data) & set(self.fields):
                return  # an update naming no field it may change: the contract's no_updates_provided, said later
            if unknown:
                known = ", ".join(sorted(self.fields))
                raise serializers.ValidationError(
                    {
                        unknown[0]: [
                            ErrorDetail(
                                f"Received unknown parameter: {unknown[0]} (this request takes {known}).",
                                code="parameter_unknown",
                            )
                        ]
                    }
                )
