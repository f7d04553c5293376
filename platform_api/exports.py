"""Exports streamed as CSV or JSON (customers here, transactions in the checkout)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter

from platform_api.errors import PlatformError


def stream_export(
    rows: Iterable[dict[str, Any]], *, fmt: str, filename: str, fields: list[str]
) -> StreamingHttpResponse:
    """CSV (a header row of `fields`, also when there is no row, then one line per row) or a JSON array,
    written as the rows are read."""

    class Echo:
        def write(self, value: str) -> str:
            return value

    def as_csv(rows_iter: Iterator[dict[str, Any]]) -> Iterator[str]:
        writer = csv.DictWriter(Echo(), fieldnames=fields)
        yield writer.writeheader()
        for row in rows_iter:
            yield writer.writerow(
                {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in row.items()}
            )

    def as_json(rows_iter: Iterator[dict[str, Any]]) -> Iterator[str]:
        yield "["
        for index, row in enumerate(rows_iter):
            yield ("," if index else "") + json.dumps(row, default=_json_default, separators=(",", ":"))
        yield "]"

    if fmt == "csv":
        body, content_type = as_csv(iter(rows)), "text/csv; charset=utf-8"
    else:
        body, content_type = as_json(iter(rows)), "application/json"
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


def _json_default(value):
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(type(value))


def export_format(request) -> str:
    fmt = request.query_params.get("format") or "csv"
    if fmt not in ("csv", "json"):
        raise PlatformError.invalid_field("format", "'format' must be 'csv' or 'json'.")
    return fmt


EXPORT_PARAMETERS = [OpenApiParameter("format", str, enum=["csv", "json"], description="Default csv.")]
