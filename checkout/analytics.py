"""GET /analytics/overview: revenue, customers, links, conversion and the top links, tokens and chains.

Revenue is what completed transactions paid, in USD, by the time they
completed; days are UTC days. It is read from `RevenueDay`, a rollup per
(organization, UTC day, link, chain, token) that each completed payment adds
to in its own transaction: an overview sums a few hundred rollup rows,
whatever the number of payments. A period that starts inside a day (the
last 7 x 24 hours) takes that first day's part from the transactions, a
short range of their covering index. The totals and top lists are merged
from those groups, never from rows.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from chains.registry import chain_get
from chains.tokens import tokens_by_chain_and_address
from checkout.models import CheckoutSession, PaymentLink, Transaction
from checkout.selectors import sum_usd
from merchant.models import Customer, RevenueDay
from platform_api.api import PlatformAPIView
from platform_api.errors import PlatformError
from platform_api.models import Organization
from platform_api.views import ERRORS

PERIODS = {"7d": 7, "30d": 30, "90d": 90, "all": None}


DAILY_DAYS = 90


TOP = 5


def _money(value: Decimal | None) -> str:
    return f"{value or Decimal(0):.2f}"


GROUP = ("payment_link_id", "chain_id", "token_address")


# --- the daily rollup -------------------------------------------------------------------------


@transaction.atomic
def revenue_rebuild(*, organization: Organization | None = None) -> int:
    """Recompute the rollup from the completed transactions (all organizations, or one); the rows written.

    On PostgreSQL the rollup is locked against writers first: a payment completing
    meanwhile waits and is then added once, never lost nor counted twice.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {RevenueDay._meta.db_table} IN EXCLUSIVE MODE")
    completed = Transaction.objects.filter(status=Transaction.Status.COMPLETED, completed_at__isnull=False)
    existing = RevenueDay.objects.all()
    if organization is not None:
        completed, existing = (
            completed.filter(organization=organization),
            existing.filter(organization=organization),
        )
    rows = (
        completed.annotate(day=TruncDate("completed_at", tzinfo=UTC))
        .values("organization_id", "day", *GROUP)
        .annotate(n=Count("pk"), usd=sum_usd())
        .order_by()
    )
    existing.delete()
    created = RevenueDay.objects.bulk_create(
        (
            RevenueDay(
                organization_id=row["organization_id"],
                day=row["day"],
                payment_link_id=row["payment_link_id"] or "",
                chain_id=row["chain_id"],
                token_address=row["token_address"],
                transactions=row["n"],
                amount_usd=row["usd"] or Decimal(0),
            )
            for row in rows
        ),
        batch_size=1000,
    )
    return len(created)


# --- the overview -----------------------------------------------------------------------------


def _next_midnight(moment: datetime) -> datetime:
    day = moment.astimezone(UTC).date() + timedelta(days=1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _rolled(organization: Organization, since: datetime | None) -> list[dict[str, Any]]:
    """Count and USD per (link, chain, token) from the rollup: every day, or the whole UTC days after `since`."""
    days = RevenueDay.objects.filter(organization=organization)
    if since is not None:
        days = days.filter(day__gte=_next_midnight(since).date())
    rows = days.values(*GROUP).annotate(n=Sum("transactions"), usd=sum_usd()).order_by()
    return [{**row, "payment_link_id": row["payment_link_id"] or None} for row in rows]


def _edge(organization: Organization, since: datetime) -> list[dict[str, Any]]:
    """The same groups for the part of `since`'s UTC day after it, from the transactions (a short index range)."""
    return list(
        _completed(organization)
        .filter(completed_at__gte=since, completed_at__lt=_next_midnight(since))
        .values(*GROUP)
        .annotate(n=Count("pk"), usd=sum_usd())
        .order_by()
    )


def _daily(
    organization: Organization, since: datetime, edge: list[dict[str, Any]]
) -> list[tuple[date, int, Decimal]]:
    """(UTC day, count, USD) since `since`, oldest first: the rollup's whole days and the first day's `edge`."""
    series: dict[date, list] = {}
    if edge:
        series[since.astimezone(UTC).date()] = [
            sum(row["n"] for row in edge),
            sum((row["usd"] or Decimal(0) for row in edge), Decimal(0)),
        ]
    rolled = (
        RevenueDay.objects.filter(organization=organization, day__gte=_next_midnight(since).date())
        .values("day")
        .annotate(n=Sum("transactions"), usd=sum_usd())
        .order_by()
    )
    for row in rolled:
        series[row["day"]] = [row["n"], row["usd"] or Decimal(0)]
    return [(day, n, usd) for day, (n, usd) in sorted(series.items())]


def _completed(organization: Organization):
    return Transaction.objects.filter(organization=organization, status=Transaction.Status.COMPLETED)


def _top(groups: list[dict[str, Any]], key) -> list[tuple[Any, int, Decimal]]:
    """Merge the groups by `key` and keep the TOP by revenue (then count)."""
    merged: dict[Any, list] = defaultdict(lambda: [0, Decimal(0)])
    for row in groups:
        k = key(row)
        if k is not None:
            merged[k][0] += row["n"]
            merged[k][1] += row["usd"] or Decimal(0)
    ranked = sorted(merged.items(), key=lambda item: (item[1][1], item[1][0]), reverse=True)[:TOP]
    return [(k, n, usd) for k, (n, usd) in ranked]


def analytics_overview(
    *, organization: Organization, period: str, now: datetime | None = None
) -> dict[str, Any]:
    days = PERIODS[period]
    now = now or timezone.now()
    since = now - timedelta(days=days) if days is not None else None
    all_time = _rolled(organization, None)
    daily_since = now - timedelta(
        days=min(days or DAILY_DAYS, DAILY_DAYS)
    )  # the period's start but for `all`
    edge = _edge(organization, daily_since)
    in_period = all_time if since is None else _rolled(organization, since) + edge
    daily = _daily(organization, daily_since, edge)
    top_links = _top(in_period, lambda row: row["payment_link_id"])
    names = dict(PaymentLink.objects.filter(pk__in=[k for k, _, _ in top_links]).values_list("pk", "name"))
    top_tokens = _top(in_period, lambda row: (row["chain_id"], row["token_address"]))
    registry = tokens_by_chain_and_address([k for k, _, _ in top_tokens])
    top_chains = _top(in_period, lambda row: row["chain_id"])
    customers = Customer.objects.filter(organization=organization).aggregate(
        total=Count("pk"), new=Count("pk", filter=Q(first_payment_at__gte=since)) if since else Count("pk")
    )
    links = PaymentLink.objects.filter(organization=organization, deleted_at__isnull=True).aggregate(
        total=Count("pk"), active=Count("pk", filter=Q(is_active=True))
    )
    sessions = CheckoutSession.objects.platform().filter(organization=organization)
    if since is not None:
        sessions = sessions.filter(created_at__gte=since)
    funnel = sessions.aggregate(total=Count("pk"), done=Count("pk", filter=Q(status="completed")))
    return {
        "object": "analytics_overview",
        "period": period,
        "revenue": {
            "period_usd": _money(sum((r["usd"] or Decimal(0) for r in in_period), Decimal(0))),
            "period_transactions": sum(r["n"] for r in in_period),
            "all_time_usd": _money(sum((r["usd"] or Decimal(0) for r in all_time), Decimal(0))),
            "all_time_transactions": sum(r["n"] for r in all_time),
        },
        "customers": {"total": customers["total"], "new_in_period": customers["new"]},
        "payment_links": {"total": links["total"], "active": links["active"]},
        "conversion_rate": round(funnel["done"] / funnel["total"], 4) if funnel["total"] else 0.0,
        "daily": [
            {"date": day.isoformat(), "transactions": n, "revenue_usd": _money(usd)} for day, n, usd in daily
        ],
        "top_payment_links": [
            {"id": k, "name": names.get(k), "revenue_usd": _money(usd), "transactions": n}
            for k, n, usd in top_links
        ],
        "top_tokens": [
            {
                "symbol": getattr(registry.get((chain_id, address.lower())), "symbol", None),
                "address": address,
                "chain_id": chain_id,
                "revenue_usd": _money(usd),
                "transactions": n,
            }
            for (chain_id, address), n, usd in top_tokens
        ],
        "top_chains": [
            {
                "chain_id": k,
                "name": getattr(chain_get(k), "name", None),
                "revenue_usd": _money(usd),
                "transactions": n,
            }
            for k, n, usd in top_chains
        ],
    }


def _ranked(name: str, fields: dict[str, serializers.Field]) -> serializers.Serializer:
    """A top-N row: what it is, its completed revenue and count in the period."""
    return inline_serializer(
        name,
        {**fields, "revenue_usd": serializers.CharField(), "transactions": serializers.IntegerField()},
        many=True,
    )


OVERVIEW = inline_serializer(
    "AnalyticsOverview",
    {
        "object": serializers.CharField(default="analytics_overview"),
        "period": serializers.ChoiceField(choices=list(PERIODS)),
        "revenue": inline_serializer(
            "AnalyticsRevenue",
            {
                "period_usd": serializers.CharField(),
                "period_transactions": serializers.IntegerField(),
                "all_time_usd": serializers.CharField(),
                "all_time_transactions": serializers.IntegerField(),
            },
        ),
        "customers": inline_serializer(
            "AnalyticsCustomers",
            {
                "total": serializers.IntegerField(),
                "new_in_period": serializers.IntegerField(),
            },
        ),
        "payment_links": inline_serializer(
            "AnalyticsPaymentLinks",
            {
                "total": serializers.IntegerField(),
                "active": serializers.IntegerField(),
            },
        ),
        "conversion_rate": serializers.FloatField(
            help_text="Completed checkout sessions / sessions, in the period."
        ),
        "daily": inline_serializer(
            "AnalyticsDay",
            {
                "date": serializers.DateField(),
                "transactions": serializers.IntegerField(),
                "revenue_usd": serializers.CharField(),
            },
            many=True,
        ),
        "top_payment_links": _ranked(
            "AnalyticsTopLink",
            {
                "id": serializers.CharField(),
                "name": serializers.CharField(allow_null=True),
            },
        ),
        "top_tokens": _ranked(
            "AnalyticsTopToken",
            {
                "symbol": serializers.CharField(allow_null=True),
                "address": serializers.CharField(),
                "chain_id": serializers.IntegerField(),
            },
        ),
        "top_chains": _ranked(
            "AnalyticsTopChain",
            {
                "chain_id": serializers.IntegerField(),
                "name": serializers.CharField(allow_null=True),
            },
        ),
    },
)


class AnalyticsOverviewView(PlatformAPIView):
    @extend_schema(
        operation_id="analytics_overview",
        tags=["Analytics"],
        parameters=[OpenApiParameter("period", str, enum=list(PERIODS), description="Default 30d.")],
        responses={200: OVERVIEW, **ERRORS},
        description="Revenue (completed payments, USD, by completion time), customers, links, the checkout "
        "conversion rate, a daily series (UTC days, the latest 90 at most) and the top links, tokens and chains.",
    )
    def get(self, request):
        period = request.query_params.get("period") or "30d"
        if period not in PERIODS:
            raise PlatformError.invalid_field("period", f"'period' must be one of: {', '.join(PERIODS)}.")
        return Response(analytics_overview(organization=request.auth.organization, period=period))
