"""The dashboard's pages. Each reads only the signed-in member's organization: every query starts from
`request.organization`, and an id of another organization's record is 404, as if it did not exist."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

from django.core.paginator import Paginator
from django.db.models import Q, QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from chains.evm import ADDRESS_RE, to_checksum_address
from checkout.models import CheckoutSession, Transaction
from checkout.receipts import explorer_link, short_hash
from dashboard import payment_story
from dashboard.amounts import chain_name, token_amount
from dashboard.auth import member_view, owned
from dashboard.charts import Bar, bar_chart
from dashboard.refund_parts import payment_refunds
from merchant.models import RevenueDay
from orders.models import DepositTx, Order, RefundTx, RelayTx
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


_chain = chain_name


@require_GET
@member_view()
def home(request: HttpRequest) -> HttpResponse:
    organization = request.organization
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
        # The same rows the payments page lists for "failed or refunded" (a week's, on the organization's
        # created_at index), so the count and the list agree.
        "refunds": needing_attention(Transaction.objects.filter(organization=organization)).count(),
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
            "recent": [payment_row(txn) for txn in recent],
            "attention": attention,
            "nav": "home",
        },
    )


ATTENTION = "attention"  # the payments list's filter: failed or refunded in the last 7 days


def needing_attention(payments: QuerySet[Transaction]) -> QuerySet[Transaction]:
    """Payments of the last 7 days that failed, or that were refunded in part or in full."""
    week_ago = timezone.now() - timedelta(days=7)
    return payments.filter(created_at__gte=week_ago).filter(
        Q(status=Transaction.Status.FAILED) | Q(refunded_amount__gt=0)
    )


def payment_row(txn: Transaction) -> dict:
    return {
        "id": txn.id,
        "status": txn.status,
        "amount": token_amount(txn.chain_id, txn.token_address, txn.amount),
        "amount_usd": txn.amount_usd,
        "chain": _chain(txn.chain_id),
        "payer": txn.from_address,
        "created_at": txn.created_at,
    }


HASH = re.compile(r"0x[0-9a-fA-F]{64}")


def _searched(found: QuerySet[Transaction], organization, query: str) -> QuerySet[Transaction]:
    """What `query` is, by its shape: a payment's id, a link's id, a deposit's hash, a payer's address,
    else the merchant's reference of the checkout. Each is one lookup on an index of the organization's."""
    if query.startswith("txn_"):
        return found.filter(id=query)
    if query.startswith("pl_"):
        return found.filter(payment_link_id=query)
    if HASH.fullmatch(query):
        return found.filter(tx_hash__in={query, query.lower()})
    if ADDRESS_RE.fullmatch(query):
        return found.filter(from_address__in={query, query.lower(), to_checksum_address(query)})
    sessions = CheckoutSession.objects.platform().filter(organization=organization, client_reference_id=query)
    return found.filter(session__in=sessions.values("pk"))


@require_GET
@member_view()
def payments(request: HttpRequest) -> HttpResponse:
    """The organization's payments, newest first, filtered by status and searched by id, hash, payer or
    reference; the filter form updates the table in place with htmx and still works as a plain GET."""
    organization = request.organization
    found = Transaction.objects.filter(organization=organization)
    status = request.GET.get("status", "")
    if status in Transaction.Status.values:
        found = found.filter(status=status)
    elif status == ATTENTION:
        found = needing_attention(found)
    query = request.GET.get("q", "").strip()[:100]
    if query:
        found = _searched(found, organization, query)
    page = Paginator(found.only(*ROW_FIELDS).order_by("-created_at", "-id"), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {
        "member": request.member,
        "rows": [payment_row(txn) for txn in page.object_list],
        "page": page,
        "status": status,
        "q": query,
        "statuses": [(value, value) for value in Transaction.Status.values]
        + [(ATTENTION, "failed or refunded, last 7 days")],
        "nav": "payments",
    }
    template = (
        "dashboard/_payments_table.html" if request.headers.get("HX-Request") else "dashboard/payments.html"
    )
    return render(request, template, context)


@require_GET
@member_view()
def payment(request: HttpRequest, transaction_id: str) -> HttpResponse:
    txn = owned(
        Transaction.objects.select_related("session", "payment_link", "customer"),
        request,
        transaction_id,
        "payment",
    )
    return payment_page(request, txn)


ADDRESS_PARTS = ("name", "line1", "line2", "city", "state", "zip", "postal_code", "country")


def _answer(value) -> str:
    """A form answer as one line: an address's parts in order, a list's items, anything else as it is."""
    if isinstance(value, dict):
        return ", ".join(str(value[k]) for k in ADDRESS_PARTS if value.get(k))
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def _payer_details(txn: Transaction) -> list[tuple[str, str]]:
    """What the payer told the merchant: name and email, each form answer under its field's label, the
    shipping address (decrypted only here, for a member of the organization)."""
    session = txn.session
    rows: list[tuple[str, str]] = []
    if session is not None:
        told = (("Name", session.customer_name), ("Email", session.customer_email))
        rows += [(label, value) for label, value in told if value]
    answers = txn.form_data if isinstance(txn.form_data, dict) else {}
    schema = (txn.payment_link.form_schema if txn.payment_link else None) or {}
    labels = {
        field.get("id"): field.get("label") or field.get("id")
        for field in (schema.get("fields") or [])
        if isinstance(field, dict)
    }
    for key, value in answers.items():
        row = (str(labels.get(key) or key), _answer(value))
        if row not in rows:  # a form's email field that is also the checkout's email is said once
            rows.append(row)
    if isinstance(txn.shipping_address, dict) and txn.shipping_address:
        rows.append(("Ships to", _answer(txn.shipping_address)))
    return rows


def payment_page(
    request: HttpRequest, txn: Transaction, *, refund_form=None, status: int = 200
) -> HttpResponse:
    """One payment: its facts, timeline, transfers, and its refunds (with the refund form, or `refund_form`
    showing what was refused)."""
    order = Order.objects.filter(pk=txn.order_id).first()

    def hashes(rows, label):
        return [
            {
                "label": label,
                "hash": row.tx_hash,
                "short": short_hash(row.tx_hash),
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
        deliveries = hashes(RelayTx.objects.filter(order=order).order_by("created_at"), "Delivery")
        delivered = payment_story.delivered(order)
        for delivery in deliveries:  # a delivery row has no amount of its own: what the order delivered
            if delivery["status"] == "success":
                delivery["amount"] = delivered
        transfers = (
            hashes(DepositTx.objects.filter(order=order).order_by("created_at"), "Deposit")
            + deliveries
            + hashes(RefundTx.objects.filter(order=order).order_by("created_at"), "Refund")
        )
    return render(
        request,
        "dashboard/payment.html",
        {
            "member": request.member,
            "txn": txn,
            "row": payment_row(txn),
            "source_chain": _chain(txn.source_chain_id),
            "order": order,
            "money": payment_story.money(txn, order),
            "payer": _payer_details(txn),
            "refunded": txn.status == Transaction.Status.FAILED or bool(txn.refunded_amount),
            "timeline": payment_story.timeline(order),
            "transfers": transfers,
            "nav": "payments",
            **payment_refunds(request, txn, refund_form),
        },
        status=status,
    )


@require_GET
@member_view()
def checkout(request: HttpRequest, session_id: str) -> HttpResponse:
    """One checkout session (from a link's list): what was asked, its state, who paid and its payments."""
    session = owned(
        CheckoutSession.objects.platform().select_related("payment_link", "discount_code", "customer"),
        request,
        session_id,
        "checkout",
    )
    payments = list(session.transactions.only(*ROW_FIELDS, "source_chain_id").order_by("-created_at"))
    # The payer's transfer is on the chain they paid from, which is the payment's source chain.
    paid_on = payments[-1].source_chain_id if payments else session.chain_id
    return render(
        request,
        "dashboard/checkout.html",
        {
            "member": request.member,
            "session": session,
            "amount": token_amount(session.chain_id, session.token_address, session.amount)
            if session.amount is not None
            else "Payer chooses",
            "discount": token_amount(session.chain_id, session.token_address, session.discount_amount)
            if session.discount_amount
            else None,
            "chain": _chain(session.chain_id),
            "payment_url": explorer_link(paid_on, session.tx_hash) if session.tx_hash else None,
            "paid_on": _chain(paid_on),
            "rows": [payment_row(txn) for txn in payments],
            "nav": "links",
        },
    )
