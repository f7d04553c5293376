"""The dashboard's pages. Each reads only the signed-in member's organization: every query starts from
`request.member.organization`, and an id of another organization's record is 404, as if it did not exist."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.core.paginator import Paginator
from django.db.models import Q, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from chains.registry import chain_get
from checkout.display import display_token, format_units
from checkout.models import Transaction
from checkout.receipts import explorer_link
from dashboard.auth import member_view
from dashboard.charts import Bar, bar_chart
from merchant.models import RevenueDay
from orders.models import DepositTx, Order, OrderStatusChange, RefundTx, RelayTx
from webhooks.models import WebhookDelivery, WebhookEndpoint

# What a payment's row shows: only these columns are read (a row's personal data stays encrypted, unread).
ROW_FIELDS = (
    "id",
    "status",
    "chain_id",
    "token_address",
    "amount",
    "amount_usd",
    "from_address",
    "created_at",
)
CHART_DAYS = 30
PAGE_SIZE = 25


def token_amount(chain_id: int, address: str, amount) -> str:
    token = display_token(chain_id, address)
    if token is None or amount is None:
        return f"{amount} units" if amount is not None else "-"
    return f"{format_units(int(amount), token.decimals)} {token.symbol}"


def _chain(chain_id: int) -> str:
    chain = chain_get(chain_id)
    return chain.name if chain else f"chain {chain_id}"


@require_GET
@member_view()
def home(request: HttpRequest) -> HttpResponse:
    organization = request.member.organization
    today = timezone.now().date()
    first = today - timedelta(days=CHART_DAYS - 1)
    days = {
        row["day"]: row
        for row in RevenueDay.objects.filter(
            organization=organization, day__gte=min(first, today.replace(day=1))
        )
        .values("day")
        .annotate(revenue=Sum("amount_usd"), count=Sum("transactions"))
    }
    month = [row for day, row in days.items() if day >= today.replace(day=1)]
    bars = [
        Bar(
            day=first + timedelta(days=n),
            value=(days.get(first + timedelta(days=n)) or {}).get("revenue") or Decimal(0),
        )
        for n in range(CHART_DAYS)
    ]
    recent = list(
        Transaction.objects.filter(organization=organization).only(*ROW_FIELDS).order_by("-created_at")[:8]
    )
    week_ago = timezone.now() - timedelta(days=7)
    attention = {
        "disabled_endpoints": list(
            WebhookEndpoint.objects.filter(organization=organization, is_active=False).only(
                "id", "url", "disabled_reason"
            )[:5]
        ),
        "failed_deliveries": WebhookDelivery.objects.filter(
            endpoint__organization=organization, status="failed", created_at__gte=week_ago
        ).count(),
        # On the (organization, status, created_at) and (organization, created_at) indexes: a week's rows.
        "refunds": Transaction.objects.filter(
            organization=organization, status=Transaction.Status.FAILED, created_at__gte=week_ago
        ).count()
        + Transaction.objects.filter(
            organization=organization, created_at__gte=week_ago, refunded_amount__gt=0
        )
        .exclude(status=Transaction.Status.FAILED)
        .count(),
    }
    return render(
        request,
        "dashboard/home.html",
        {
            "member": request.member,
            "today": days.get(today) or {"revenue": Decimal(0), "count": 0},
            "month": {
                "revenue": sum((row["revenue"] or Decimal(0) for row in month), Decimal(0)),
                "count": sum(row["count"] or 0 for row in month),
            },
            "chart": bar_chart(bars, label=f"Revenue per day, in USD, over the last {CHART_DAYS} days"),
            "bars": bars,
            "recent": [_row(txn) for txn in recent],
            "attention": attention,
            "nav": "home",
        },
    )


def _row(txn: Transaction) -> dict:
    return {
        "id": txn.id,
        "status": txn.status,
        "amount": token_amount(txn.chain_id, txn.token_address, txn.amount),
        "amount_usd": txn.amount_usd,
        "chain": _chain(txn.chain_id),
        "payer": txn.from_address,
        "created_at": txn.created_at,
    }


@require_GET
@member_view()
def payments(request: HttpRequest) -> HttpResponse:
    """The organization's payments, newest first, filtered by status and searched by id, hash, payer or
    reference; the filter form updates the table in place with htmx and still works as a plain GET."""
    organization = request.member.organization
    found = Transaction.objects.filter(organization=organization)
    status = request.GET.get("status", "")
    if status in Transaction.Status.values:
        found = found.filter(status=status)
    query = request.GET.get("q", "").strip()[:100]
    if query:
        found = found.filter(
            Q(id=query)
            | Q(tx_hash__iexact=query)
            | Q(from_address__iexact=query)
            | Q(session__client_reference_id=query)
            | Q(payment_link_id=query)
        )
    page = Paginator(found.only(*ROW_FIELDS).order_by("-created_at", "-id"), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {
        "member": request.member,
        "rows": [_row(txn) for txn in page.object_list],
        "page": page,
        "status": status,
        "q": query,
        "statuses": Transaction.Status.values,
        "nav": "payments",
    }
    template = (
        "dashboard/_payments_table.html" if request.headers.get("HX-Request") else "dashboard/payments.html"
    )
    return render(request, template, context)


@require_GET
@member_view()
def payment(request: HttpRequest, transaction_id: str) -> HttpResponse:
    txn = (
        Transaction.objects.select_related("session", "payment_link", "customer")
        .filter(organization=request.member.organization, pk=transaction_id)
        .first()
    )
    if txn is None:
        raise Http404("There is no such payment.")
    order = Order.objects.filter(pk=txn.order_id).first()
    timeline = list(OrderStatusChange.objects.filter(order_id=txn.order_id).order_by("created_at", "id"))

    def hashes(rows, label):
        return [
            {
                "label": label,
                "hash": row.tx_hash,
                "chain": _chain(row.chain),
                "url": explorer_link(row.chain, row.tx_hash),
                "amount": token_amount(
                    row.chain,
                    getattr(row, "token_address", "") or (order.src_token_address if order else ""),
                    getattr(row, "amount", None),
                )
                if hasattr(row, "amount")
                else "",
                "status": getattr(
                    row, "status", "counted" if getattr(row, "counted", True) else "not counted"
                ),
                "at": row.created_at,
            }
            for row in rows
        ]

    transfers = []
    if order is not None:
        transfers = (
            hashes(DepositTx.objects.filter(order=order).order_by("created_at"), "Deposit")
            + hashes(RelayTx.objects.filter(order=order).order_by("created_at"), "Delivery")
            + hashes(RefundTx.objects.filter(order=order).order_by("created_at"), "Refund")
        )
    return render(
        request,
        "dashboard/payment.html",
        {
            "member": request.member,
            "txn": txn,
            "row": _row(txn),
            "source_chain": _chain(txn.source_chain_id),
            "order": order,
            "timeline": timeline,
            "transfers": transfers,
            "nav": "payments",
        },
    )
