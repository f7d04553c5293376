"""GET /analytics/overview: revenue, customers, links, conversion and the top links, tokens and chains.

Every figure comes from aggregate queries: one pass groups the completed
transactions by (link, chain, token), for all time and for the period, and
the totals and top lists are merged from those few groups (never from rows);
days are UTC days. Revenue is what completed transactions paid, in USD, by
the time they completed.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, DecimalField, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from chains.registry import chain_get
from chains.tokens import tokens_by_chain_and_address
from platform_api.api import PlatformAPIView
from platform_api.errors import PlatformError
from platform_api.models import Customer, Organization, PaymentLink, PlatformCheckoutSession, Transaction
from platform_api.views import ERRORS

PERIODS = {"7d": 7, "30d": 30, "90d": 90, "all": None}
DAILY_DAYS = 90
TOP = 5


def _usd() -> Sum:
    return Sum("amount_usd", output_field=DecimalField(max_digits=20, decimal_places=2))


def _money(value: Decimal | None) -> str:
    return f"{value or Decimal(0):.2f}"


GROUP = ("payment_link_id", "chain_id", "token_address")


def _groups(transactions) -> list[dict[str, Any]]:
    """Count and USD sum per (link, chain, token): one pass over the transactions, a few dozen rows out."""
    return list(transactions.values(*GROUP).annotate(n=Count("pk"), usd=_usd()).order_by())


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


def analytics_overview(*, organization: Organization, period: str) -> dict[str, Any]:
    days = PERIODS[period]
    now = timezone.now()
    since = now - timedelta(days=days) if days is not None else None
    completed = Transaction.objects.filter(organization=organization, status=Transaction.Status.COMPLETED)
    all_time = _groups(completed)
    in_period = all_time if since is None else _groups(completed.filter(completed_at__gte=since))
    daily_since = now - timedelta(days=min(days or DAILY_DAYS, DAILY_DAYS))
    daily = (
        completed.filter(completed_at__gte=daily_since)
        .annotate(day=TruncDate("completed_at", tzinfo=UTC))
        .values("day").annotate(n=Count("pk"), usd=_usd()).order_by("day")
    )  # fmt: skip
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
    sessions = PlatformCheckoutSession.objects.filter(organization=organization)
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
        "daily": [{"date": row["day"].isoformat(), "transactions": row["n"], "revenue_usd": _money(row["usd"])}
                  for row in daily],
        "top_payment_links": [{"id": k, "name": names.get(k), "revenue_usd": _money(usd), "transactions": n}
                              for k, n, usd in top_links],
        "top_tokens": [
            {"symbol": getattr(registry.get((chain_id, address.lower())), "symbol", None), "address": address,
             "chain_id": chain_id, "revenue_usd": _money(usd), "transactions": n}
            for (chain_id, address), n, usd in top_tokens
        ],
        "top_chains": [{"chain_id": k, "name": getattr(chain_get(k), "name", None), "revenue_usd": _money(usd),
                        "transactions": n} for k, n, usd in top_chains],
    }  # fmt: skip


def _ranked(name: str, fields: dict[str, serializers.Field]) -> serializers.Serializer:
    """A top-N row: what it is, its completed revenue and count in the period."""
    return inline_serializer(name, {**fields, "revenue_usd": serializers.CharField(),
                                    "transactions": serializers.IntegerField()}, many=True)  # fmt: skip


OVERVIEW = inline_serializer("AnalyticsOverview", {
    "object": serializers.CharField(default="analytics_overview"),
    "period": serializers.ChoiceField(choices=list(PERIODS)),
    "revenue": inline_serializer("AnalyticsRevenue", {
        "period_usd": serializers.CharField(), "period_transactions": serializers.IntegerField(),
        "all_time_usd": serializers.CharField(), "all_time_transactions": serializers.IntegerField(),
    }),
    "customers": inline_serializer("AnalyticsCustomers", {
        "total": serializers.IntegerField(), "new_in_period": serializers.IntegerField(),
    }),
    "payment_links": inline_serializer("AnalyticsPaymentLinks", {
        "total": serializers.IntegerField(), "active": serializers.IntegerField(),
    }),
    "conversion_rate": serializers.FloatField(help_text="Completed checkout sessions / sessions, in the period."),
    "daily": inline_serializer("AnalyticsDay", {
        "date": serializers.DateField(), "transactions": serializers.IntegerField(),
        "revenue_usd": serializers.CharField(),
    }, many=True),
    "top_payment_links": _ranked("AnalyticsTopLink", {
        "id": serializers.CharField(), "name": serializers.CharField(allow_null=True),
    }),
    "top_tokens": _ranked("AnalyticsTopToken", {
        "symbol": serializers.CharField(allow_null=True), "address": serializers.CharField(),
        "chain_id": serializers.IntegerField(),
    }),
    "top_chains": _ranked("AnalyticsTopChain", {
        "chain_id": serializers.IntegerField(), "name": serializers.CharField(allow_null=True),
    }),
})  # fmt: skip


class AnalyticsOverviewView(PlatformAPIView):
    @extend_schema(
        operation_id="analytics_overview", tags=["Analytics"],
        parameters=[OpenApiParameter("period", str, enum=list(PERIODS), description="Default 30d.")],
        responses={200: OVERVIEW, **ERRORS},
        description="Revenue (completed payments, USD, by completion time), customers, links, the checkout "
        "conversion rate, a daily series (UTC days, the latest 90 at most) and the top links, tokens and chains.",
    )  # fmt: skip
    def get(self, request):
        period = request.query_params.get("period") or "30d"
        if period not in PERIODS:
            raise PlatformError.invalid_field("period", f"'period' must be one of: {', '.join(PERIODS)}.")
        return Response(analytics_overview(organization=request.auth.organization, period=period))
