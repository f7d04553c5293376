"""Read pages of the merchant's records: analytics (the API's overview, drawn), products, discount codes and
customers. Everything comes from the same selectors as the API, scoped to the member's organization."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from checkout.analytics import PERIODS, analytics_overview
from checkout.discount_api import discount_code_list
from dashboard.auth import member_view
from dashboard.charts import Bar, bar_chart
from dashboard.pages import token_amount
from merchant.customers import customer_list
from merchant.products import product_list

PAGE_SIZE = 25


def _page(request: HttpRequest, rows):
    return Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))


@require_GET
@member_view()
def analytics(request: HttpRequest) -> HttpResponse:
    period = request.GET.get("period", "30d")
    if period not in PERIODS:
        period = "30d"
    overview = analytics_overview(organization=request.member.organization, period=period)
    bars = [
        Bar(day=date.fromisoformat(row["date"]), value=Decimal(row["revenue_usd"]))
        for row in overview["daily"]
    ]
    return render(
        request,
        "dashboard/analytics.html",
        {
            "member": request.member,
            "overview": overview,
            "period": period,
            "periods": list(PERIODS),
            "chart": bar_chart(bars[-90:], label=f"Revenue per day, in USD, period {period}"),
            "nav": "analytics",
        },
    )


@require_GET
@member_view()
def products(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:100]
    page = _page(
        request,
        product_list(organization=request.member.organization, search=query or None).order_by(
            "-created_at", "-id"
        ),
    )
    rows = [
        {
            "product": p,
            "price": token_amount(p.chain_id, p.token_address, p.amount)
            if p.amount is not None
            else "Payer chooses",
        }
        for p in page.object_list
    ]
    return render(
        request,
        "dashboard/products.html",
        {"member": request.member, "rows": rows, "page": page, "q": query, "nav": "products"},
    )


@require_GET
@member_view()
def discounts(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:60]
    page = _page(
        request,
        discount_code_list(organization=request.member.organization, search=query or None).order_by(
            "-created_at", "-id"
        ),
    )
    return render(
        request,
        "dashboard/discounts.html",
        {"member": request.member, "codes": page.object_list, "page": page, "q": query, "nav": "discounts"},
    )


@require_GET
@member_view()
def customers(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:254]
    page = _page(
        request,
        customer_list(organization=request.member.organization, search=query or None).order_by(
            "-created_at", "-id"
        ),
    )
    return render(
        request,
        "dashboard/customers.html",
        {
            "member": request.member,
            "customers": page.object_list,
            "page": page,
            "q": query,
            "nav": "customers",
        },
    )
