"""GET /analytics/overview: revenue, customers, links, conversion and the top links, tokens and chains.

Every figure is an aggregate query over indexed columns (no per-row Python);
days are UTC days. Revenue is what completed transactions paid, in USD, by
the time they completed.
"""

from __future__ import annotations

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


def analytics_overview(*, organization: Organization, period: str) -> dict[str, Any]:
    days = PERIODS[period]
    now = timezone.now()
    since = now - timedelta(days=days) if days is not None else None
    completed = Transaction.objects.filter(organization=organization, status=Transaction.Status.COMPLETED)
    in_period = completed.filter(completed_at__gte=since) if since is not None else completed
    totals = completed.aggregate(
        usd=_usd(), n=Count("pk"),
        period_usd=_usd() if since is None else Sum("amount_usd", filter=Q(completed_at__gte=since),
                                                    output_field=DecimalField(max_digits=20, decimal_places=2)),
        period_n=Count("pk") if since is None else Count("pk", filter=Q(completed_at__gte=since)),
    )  # fmt: skip
    daily_since = now - timedelta(days=min(days or DAILY_DAYS, DAILY_DAYS))
    daily = (
        completed.filter(completed_at__gte=daily_since)
        .annotate(day=TruncDate("completed_at", tzinfo=UTC))
        .values("day").annotate(n=Count("pk"), usd=_usd()).order_by("day")
    )  # fmt: skip
    top_links = (
        in_period.exclude(payment_link=None).values("payment_link_id", "payment_link__name")
        .annotate(n=Count("pk"), usd=_usd()).order_by("-usd", "-n")[:TOP]
    )  # fmt: skip
    top_tokens = list(
        in_period.values("chain_id", "token_address")
        .annotate(n=Count("pk"), usd=_usd())
        .order_by("-usd", "-n")[:TOP]
    )
    registry = tokens_by_chain_and_address([(row["chain_id"], row["token_address"]) for row in top_tokens])
    top_chains = in_period.values("chain_id").annotate(n=Count("pk"), usd=_usd()).order_by("-usd", "-n")[:TOP]
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
            "period_usd": _money(totals["period_usd"]), "period_transactions": totals["period_n"],
            "all_time_usd": _money(totals["usd"]), "all_time_transactions": totals["n"],
        },
        "customers": {"total": customers["total"], "new_in_period": customers["new"]},
        "payment_links": {"total": links["total"], "active": links["active"]},
        "conversion_rate": round(funnel["done"] / funnel["total"], 4) if funnel["total"] else 0.0,
        "daily": [{"date": row["day"].isoformat(), "transactions": row["n"], "revenue_usd": _money(row["usd"])}
                  for row in daily],
        "top_payment_links": [{"id": row["payment_link_id"], "name": row["payment_link__name"],
                               "revenue_usd": _money(row["usd"]), "transactions": row["n"]} for row in top_links],
        "top_tokens": [
            {"symbol": getattr(registry.get((row["chain_id"], row["token_address"].lower())), "symbol", None),
             "address": row["token_address"], "chain_id": row["chain_id"], "revenue_usd": _money(row["usd"]),
             "transactions": row["n"]}
            for row in top_tokens
        ],
        "top_chains": [{"chain_id": row["chain_id"], "name": getattr(chain_get(row["chain_id"]), "name", None),
                        "revenue_usd": _money(row["usd"]), "transactions": row["n"]} for row in top_chains],
    }  # fmt: skip


class AnalyticsOverviewView(PlatformAPIView):
    @extend_schema(
        operation_id="analytics_overview", tags=["Analytics"],
        parameters=[OpenApiParameter("period", str, enum=list(PERIODS), description="Default 30d.")],
        responses={200: inline_serializer("AnalyticsOverview", {
            "object": serializers.CharField(), "period": serializers.CharField(),
            "revenue": serializers.DictField(), "customers": serializers.DictField(),
            "payment_links": serializers.DictField(), "conversion_rate": serializers.FloatField(),
            "daily": serializers.ListField(child=serializers.DictField()),
            "top_payment_links": serializers.ListField(child=serializers.DictField()),
            "top_tokens": serializers.ListField(child=serializers.DictField()),
            "top_chains": serializers.ListField(child=serializers.DictField()),
        }), **ERRORS},
        description="Revenue (completed payments, USD, by completion time), customers, links, the checkout "
        "conversion rate, a daily series (UTC days, the latest 90 at most) and the top links, tokens and chains.",
    )  # fmt: skip
    def get(self, request):
        period = request.query_params.get("period") or "30d"
        if period not in PERIODS:
            raise PlatformError.invalid_field("period", f"'period' must be one of: {', '.join(PERIODS)}.")
        return Response(analytics_overview(organization=request.auth.organization, period=period))
