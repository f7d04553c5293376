"""Query strings parsed by per-API filter serializers (HackSoft's `FilterSerializer`), so that selectors
take typed keyword arguments and never read a query dict.

An empty value is no filter. A bad value is refused with the platform's `invalid_field_value` and
`param` naming it (the messages name the parameter first, as the platform's do). `from` and `to` are
epoch milliseconds and arrive as `created_from` / `created_to`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rest_framework import serializers

from platform_api.inputs import MAX_MILLIS


class QueryField(serializers.Field):
    """A query parameter: optional, and empty means absent."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data in ("", serializers.empty, None):
            raise serializers.SkipField()
        return False, data

    def refuse(self, what: str) -> None:
        raise serializers.ValidationError(f"'{self.field_name}' {what}")

    def to_representation(self, value: Any) -> Any:
        return value


class TextFilter(QueryField):
    """Free text (a search), trimmed; blank is no filter."""

    def to_internal_value(self, data: Any) -> str:
        text = str(data).strip()
        if not text:
            raise serializers.SkipField()
        return text


class IdFilter(QueryField):
    def to_internal_value(self, data: Any) -> str:
        return str(data)


class BoolFilter(QueryField):
    def to_internal_value(self, data: Any) -> bool:
        if data not in ("true", "false"):
            self.refuse("must be 'true' or 'false'.")
        return data == "true"


class ChoiceFilter(QueryField):
    def __init__(self, choices: Any, *, refusal: str | None = None, **kwargs: Any) -> None:
        self.choices = tuple(choices)
        self.refusal = refusal or f"must be one of: {', '.join(self.choices)}."
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if data not in self.choices:
            self.refuse(self.refusal)
        return str(data)


class WholeNumberFilter(QueryField):
    def to_internal_value(self, data: Any) -> int:
        if not (isinstance(data, str) and data.isascii() and data.isdigit() and len(data) <= 18):
            self.refuse("must be a whole number.")
        return int(data)


class MillisFilter(QueryField):
    """A time in milliseconds since the epoch, up to the last instant a datetime holds."""

    def to_internal_value(self, data: Any) -> datetime:
        if not (
            isinstance(data, str)
            and data.isascii()
            and data.isdigit()
            and len(data) <= 15
            and int(data) <= MAX_MILLIS
        ):
            self.refuse("must be a timestamp in milliseconds since the epoch.")
        return datetime.fromtimestamp(int(data) / 1000, tz=UTC)


class FilterSerializer(serializers.Serializer):
    """Parses `request.query_params`; `filters(query)` gives the validated filters as keyword arguments."""

    @classmethod
    def filters(cls, query: Any) -> dict[str, Any]:
        serializer = cls(data=query)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


class CreatedWindowFilters(FilterSerializer):
    """`from` and `to` (inclusive) on the creation time."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = MillisFilter(source="created_from")
        fields["to"] = MillisFilter(source="created_to")
        return fields
