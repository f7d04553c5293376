"""A resource serializer's output for rows read with `.values()`: the hottest lists without models or DRF's
per-field dispatch.

A list page of 20 payment links through `PaymentLinkSerializer(links, many=True)` builds 20 model instances
and calls DRF's `get_attribute` and `to_representation` for each of 30 fields: most of the request's time.
`Rows(PaymentLinkSerializer, url=...)` reads the serializer's fields once, selects only their columns, and
renders each row dict with the field's own `to_representation` where it converts something (dates,
amounts), passing plain values through where DRF would return them unchanged (a `str` of a CharField, an
`int` of an IntegerField, a `bool`, JSON). The serializer stays the one description of the resource (and
of its OpenAPI schema); `tests/platform_api/test_rows.py` checks both give the same output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db.models import QuerySet
from rest_framework import serializers

# Fields whose to_representation returns a value of this type unchanged.
_PASS_THROUGH: dict[type, tuple[type, ...]] = {
    serializers.CharField: (str,),
    serializers.IntegerField: (int,),
    serializers.BooleanField: (bool,),
}


class Rows:
    def __init__(self, serializer_class: type[serializers.Serializer], **computed: Callable[[dict], Any]):
        """`computed` gives, by field name, each SerializerMethodField's value from the row dict."""
        fields = serializer_class().fields
        self.plan: list[tuple[str, str | None, Callable[[Any], Any] | None, tuple[type, ...]]] = []
        columns: list[str] = []
        for name, field in fields.items():
            if field.write_only:
                continue
            if isinstance(field, serializers.SerializerMethodField):
                if name not in computed:
                    raise TypeError(f"{serializer_class.__name__}.{name} needs a computed value")
                self.plan.append((name, None, computed[name], ()))
                continue
            source = field.source
            if not source or "." in source or source == "*":
                raise TypeError(
                    f"{serializer_class.__name__}.{name}: only plain columns can be read as values"
                )
            columns.append(source)
            if isinstance(field, serializers.JSONField) and not field.binary:
                self.plan.append((name, source, None, (object,)))
            else:
                self.plan.append((name, source, field.to_representation, _PASS_THROUGH.get(type(field), ())))
        self.columns = tuple(dict.fromkeys(columns))

    def values(self, queryset: QuerySet) -> QuerySet:
        """The queryset as dicts of the serializer's columns (computed values read only those)."""
        return queryset.values(*self.columns)

    def render(self, rows: Iterable[dict]) -> list[dict[str, Any]]:
        rendered = []
        for row in rows:
            out = {}
            for name, source, convert, plain in self.plan:
                if source is None:
                    out[name] = convert(row)  # type: ignore[misc]
                    continue
                value = row[source]
                if value is None:
                    out[name] = None
                elif plain and isinstance(value, plain) and not (plain == (int,) and isinstance(value, bool)):
                    out[name] = value
                else:
                    out[name] = convert(value)  # type: ignore[misc]
            rendered.append(out)
        return rendered
