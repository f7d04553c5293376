"""Read pages of the merchant's records: analytics (the API's overview, drawn), products, discount codes and
customers. Everything comes from the same selectors as the API, scoped to the member's organization."""

from __future__ import annotations

from datetime import date
from functools import partial

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from checkout.analytics import PERIODS, analytics_overview
from checkout.selectors import discount_code_list
from dashboard.auth import member_view
from dashboard.charts import daily_chart
from dashboard.discount_pages import code_token, discount_text
from dashboard.pages import token_amount
from merchant.api import customer_list, product_list

PAGE_SIZE = 25


def _page(request: HttpRequest, rows):
    return Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))


@require_GET
@member_view()
def analytics(request: HttpRequest) -> HttpResponse:
    period = request.GET.get("period", "30d")
    if period not in PERIODS:
        period = "30d"
    overview = analytics_overview(organization=request.organization, period=period)
    # A bar for every day of the period, zero where nothing was paid, as the home page's chart.
    days = PERIODS[period] or (
        (timezone.now().date() - date.fromisoformat(overview["daily"][0]["date"])).days + 1
        if overview["daily"]
        else 30
    )
    chart = daily_chart(
        overview["daily"],
        "revenue_usd",
        days=min(days, 90),
        label=f"Revenue per day, in USD, period {period}",
        unit="$",
    )
    return render(
        request,
        "dashboard/analytics.html",
        {
            "member": request.member,
            "overview": overview,
            "period": period,
            "periods": list(PERIODS),
            "chart": chart,
            "nav": "analytics",
        },
    )


def _listing(
    request: HttpRequest,
    selector,
    *,
    template: str,
    nav: str,
    max_query: int,
    rows=None,
    related=(),
    extra: dict | None = None,
) -> HttpResponse:
    """A searched, paged list of one of the organization's records, newest first, from the API's selector."""
    query = request.GET.get("q", "").strip()[:max_query]
    found = selector(organization=request.organization, search=query or None)
    if related:
        found = found.select_related(*related)
    found = found.order_by("-created_at", "-id")
    page = _page(request, found)
    items = rows(page.object_list) if rows else page.object_list
    return render(
        request,
        template,
        {"member": request.member, "rows": items, "page": page, "q": query, "nav": nav, **(extra or {})},
    )


def _priced(products) -> list[dict]:
    return [
        {
            "product": p,
            "price": token_amount(p.chain_id, p.token_address, p.amount)
            if p.amount is not None
            else "Payer chooses",
        }
        for p in products
    ]


@require_GET
@member_view()
def products(request: HttpRequest) -> HttpResponse:
    """The active products, or with `?archived=1` the archived ones (as the API's `active=false`)."""
    archived = request.GET.get("archived") == "1"
    return _listing(
        request,
        partial(product_list, active=not archived),
        template="dashboard/products.html",
        nav="products",
        max_query=100,
        rows=_priced,
        extra={"archived": archived},
    )


@require_GET
@member_view()
def discounts(request: HttpRequest) -> HttpResponse:
    organization = request.organization

    def described(codes) -> list[dict]:
        return [
            {"code": c, "discount": discount_text(c, code_token(organization, c.payment_link))} for c in codes
        ]

    return _listing(
        request,
        discount_code_list,
        template="dashboard/discounts.html",
        nav="discounts",
        max_query=60,
        rows=described,
        related=("payment_link",),
    )


@require_GET
@member_view()
def customers(request: HttpRequest) -> HttpResponse:
    return _listing(
        request, customer_list, template="dashboard/customers.html", nav="customers", max_query=254
    )
