"""Platform list conventions: page, limit, sort, order, and the list envelope.

Every platform list parses its query with `ListParams.from_query` and renders
with `list_envelope`; a resource only names the fields it can be sorted by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, QuerySet, Window

from platform_api.errors import PlatformError

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
# Pages past the end are empty; past this one the offset would be absurd (and overflow a database integer).
MAX_PAGE = 1_000_000


def parse_positive_int(query, name: str, default: int, maximum: int | None = None) -> int:
    raw = query.get(name)
    if raw in (None, ""):
        return default
    try:
        if not (raw.isascii() and raw.isdigit()):
            raise ValueError(raw)
        value = int(raw) if len(raw) <= 18 else 10**18  # too large either way; never parse 5,000 digits
    except (TypeError, ValueError):
        raise PlatformError.invalid_field(name, f"'{name}' must be a whole number, got '{raw}'.") from None
    if value < 1 or (maximum is not None and value > maximum):
        bound = f"between 1 and {maximum}" if maximum is not None else "at least 1"
        raise PlatformError.invalid_field(name, f"'{name}' must be {bound}, got {value}.")
    return value


@dataclass(frozen=True)
class ListParams:
    page: int
    limit: int
    sort: str
    order: str

    @classmethod
    def from_query(cls, query, *, sort_fields: tuple[str, ...] = ("created_at",)) -> ListParams:
        page = parse_positive_int(query, "page", 1, MAX_PAGE)
        limit = parse_positive_int(query, "limit", DEFAULT_LIMIT, MAX_LIMIT)
        sort = query.get("sort") or sort_fields[0]
        if sort not in sort_fields:
            raise PlatformError.invalid_field("sort", f"'sort' must be one of: {', '.join(sort_fields)}.")
        order = query.get("order") or "desc"
        if order not in ("asc", "desc"):
            raise PlatformError.invalid_field("order", "'order' must be 'asc' or 'desc'.")
        return cls(page=page, limit=limit, sort=sort, order=order)

    def apply(self, queryset: QuerySet, *, count_bound: int | None = None) -> tuple[list[Any], int]:
        """One page of `queryset` in the requested order (pk breaks ties, so pages never overlap), and the total.

        The page is read first; the total costs a second query only when the
        page cannot tell it (a full page, or an empty one past the first), so
        a short list is one query. With `count_bound`, the list is a window on
        the first `count_bound` matches: the count stops there (it never scans
        a million rows) and pages past it are empty, like pages past the end.
        """
        prefix = "-" if self.order == "desc" else ""
        ordered = queryset.order_by(f"{prefix}{self.sort}", f"{prefix}pk")
        offset = (self.page - 1) * self.limit
        end = offset + self.limit if count_bound is None else min(offset + self.limit, count_bound)
        rows = list(ordered[offset:end]) if offset < end else []
        if rows and len(rows) < self.limit and (count_bound is None or end < count_bound):
            return rows, offset + len(rows)  # the last page: the total is known
        if not rows and offset == 0:
            return rows, 0
        if count_bound is None:
            return rows, ordered.count()
        return rows, ordered.order_by()[:count_bound].count()

    def apply_values(self, queryset: QuerySet) -> tuple[list[dict[str, Any]], int]:
        """One page of a `.values()` queryset and the total in one query (a window count beside each row).
        Only a page past the end asks for the total by itself."""
        prefix = "-" if self.order == "desc" else ""
        ordered = queryset.annotate(_total=Window(Count("pk"))).order_by(
            f"{prefix}{self.sort}", f"{prefix}pk"
        )
        offset = (self.page - 1) * self.limit
        rows = list(ordered[offset : offset + self.limit])
        if rows:
            total = rows[0]["_total"]
            for row in rows:
                del row["_total"]
            return rows, total
        return rows, (0 if offset == 0 else queryset.order_by().count())

    def has_more(self, total: int) -> bool:
        return self.page * self.limit < total

    def total_pages(self, total: int) -> int:
        return math.ceil(total / self.limit) if total else 0


def list_envelope(*, path: str, data: list[dict], total: int, params: ListParams) -> dict[str, Any]:
    return {
        "object": "list",
        "data": data,
        "has_more": params.has_more(total),
        "total_count": total,
        "url": path,
    }
