"""Reads of payment links, checkout sessions, link visits and transactions, each scoped to one organization."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from checkout.models import CheckoutSession, DiscountCode, LinkVisit, PaymentLink, Transaction
from core.compiled import CompiledRead
from orders.models import Order
from platform_api.models import Organization
from platform_api.selectors import scoped_get

MAX_DAYS = 365  # the longest window of a link's or widget's stats

SESSION_STATUS_FILTERS = {
    "active": ("open", "processing"),
    "completed": ("completed",),
    "expired": ("expired",),
    "failed": ("failed",),
    "open": ("open",),
    "processing": ("processing",),
}


def payment_link_list(
    *, organization: Organization, search: str | None = None, active: bool | None = None
) -> QuerySet[PaymentLink]:
    links = PaymentLink.objects.filter(organization=organization, deleted_at__isnull=True)
    if search:
        links = links.filter(Q(name__icontains=search) | Q(short_code__icontains=search))
    if active is not None:
        links = links.filter(is_active=active)
    return links


def payment_link_get(*, organization: Organization, link_id: str) -> PaymentLink:
    return scoped_get(
        PaymentLink.objects.filter(deleted_at__isnull=True),
        organization=organization,
        resource_type="payment_link",
        resource_id=link_id,
    )


_link_by_code = CompiledRead(
    lambda short_code: PaymentLink.objects.select_related("organization").filter(
        short_code=short_code, deleted_at__isnull=True
    )
)


def payment_link_by_code(short_code: str) -> PaymentLink | None:
    """The link a payer's URL names (its page, its x402 offers), with its organization; None if none (or
    deleted). Whether it can be paid now is the link's own `unavailable_reason`. Every payer opens it: its
    SQL is compiled once (core.compiled)."""
    return _link_by_code.first(short_code)


def order_received(order: Order) -> int:
    """What the order has counted of its deposits so far (the hosted page's `received`; what it still waits for
    is its `src_amount` less this)."""
    return sum(int(a) for a in order.deposit_txs.filter(counted=True).values_list("amount", flat=True))


def session_waiting_order(session_id: str) -> tuple[CheckoutSession | None, Order | None]:
    """(the session, its order waiting for a payment now): None for either that there is not (an order is
    returned only while the session is open)."""
    session = CheckoutSession.objects.filter(pk=session_id).first()
    if session is None or session.status != CheckoutSession.Status.OPEN:
        return session, None
    order = Order.objects.filter(session_order__session=session, status=Order.Status.SCANNING_DEPOSIT).first()
    return session, order


def checkout_session_list(
    *,
    organization: Organization,
    link: PaymentLink | None = None,
    payment_link_id: str | None = None,
    status: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
) -> QuerySet[CheckoutSession]:
    """`status` is one of SESSION_STATUS_FILTERS (`active` is open or processing)."""
    sessions = (
        CheckoutSession.objects.platform().filter(organization=organization).select_related("discount_code")
    )
    if link is not None:
        sessions = sessions.filter(payment_link=link)
    elif payment_link_id:
        sessions = sessions.filter(payment_link_id=payment_link_id)
    if status:
        sessions = sessions.filter(status__in=SESSION_STATUS_FILTERS[status])
    if created_from is not None:
        sessions = sessions.filter(created_at__gte=created_from)
    if created_to is not None:
        sessions = sessions.filter(created_at__lte=created_to)
    return sessions


def checkout_session_get(*, organization: Organization, session_id: str) -> CheckoutSession:
    return scoped_get(
        CheckoutSession.objects.platform().select_related("discount_code"),
        organization=organization,
        resource_type="checkout_session",
        resource_id=session_id,
    )


def rate(part: int, whole: int) -> float:
    """`part / whole` to 4 places; 0.0 when there is no whole."""
    return round(part / whole, 4) if whole else 0.0


def payment_link_stats(*, link: PaymentLink, days: int) -> dict[str, Any]:
    """Views, sessions and completions over the last `days` UTC days: totals, rates, per day, per UTM."""
    since = timezone.now() - timedelta(days=days)
    visits = LinkVisit.objects.filter(payment_link=link, created_at__gte=since)
    sessions = CheckoutSession.objects.filter(payment_link=link, created_at__gte=since)
    views = visits.count()
    session_counts = sessions.aggregate(
        total=Count("pk"), completed=Count("pk", filter=Q(status="completed"))
    )
    daily: dict[str, dict[str, Any]] = {}
    for row in visits.annotate(day=TruncDate("created_at")).values("day").annotate(n=Count("pk")):
        daily.setdefault(row["day"].isoformat(), {"views": 0, "sessions": 0, "completions": 0})["views"] = (
            row["n"]
        )
    for row in (
        sessions.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("pk"), done=Count("pk", filter=Q(status="completed")))
    ):
        entry = daily.setdefault(row["day"].isoformat(), {"views": 0, "sessions": 0, "completions": 0})
        entry["sessions"], entry["completions"] = row["n"], row["done"]
    utm = [
        {
            "utm_source": row["utm_source"] or None,
            "utm_medium": row["utm_medium"] or None,
            "utm_campaign": row["utm_campaign"] or None,
            "views": row["n"],
        }
        for row in visits.values("utm_source", "utm_medium", "utm_campaign")
        .annotate(n=Count("pk"))
        .order_by("-n")[:50]
    ]
    revenue = Transaction.objects.filter(
        payment_link=link, status="completed", completed_at__gte=since
    ).aggregate(usd=sum_usd())["usd"]
    return {
        "object": "payment_link_stats",
        "payment_link_id": link.id,
        "days": days,
        "views": views,
        "sessions": session_counts["total"],
        "completions": session_counts["completed"],
        "view_to_session_rate": rate(session_counts["total"], views),
        "session_to_completion_rate": rate(session_counts["completed"], session_counts["total"]),
        "conversion_rate": rate(session_counts["completed"], views),
        "revenue_usd": f"{revenue or Decimal(0):.2f}",
        "daily": [{"date": day, **counts} for day, counts in sorted(daily.items())],
        "utm": utm,
    }


def payment_link_visitors(*, link: PaymentLink, days: int) -> QuerySet[LinkVisit]:
    return LinkVisit.objects.filter(payment_link=link, created_at__gte=timezone.now() - timedelta(days=days))


def transaction_list(
    *,
    organization: Organization,
    status: str | None = None,
    chain_id: int | None = None,
    customer_id: str | None = None,
    payment_link_id: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
) -> QuerySet[Transaction]:
    transactions = Transaction.objects.filter(organization=organization)
    if status:
        transactions = transactions.filter(status=status)
    if chain_id is not None:
        transactions = transactions.filter(chain_id=chain_id)
    if customer_id:
        transactions = transactions.filter(customer_id=customer_id)
    if payment_link_id:
        transactions = transactions.filter(payment_link_id=payment_link_id)
    if created_from is not None:
        transactions = transactions.filter(created_at__gte=created_from)
    if created_to is not None:
        transactions = transactions.filter(created_at__lte=created_to)
    return transactions


def transaction_get(*, organization: Organization, transaction_id: str) -> Transaction:
    return scoped_get(
        Transaction.objects.all(),
        organization=organization,
        resource_type="transaction",
        resource_id=transaction_id,
    )


def transaction_stats(*, organization: Organization) -> dict[str, Any]:
    """Counts by status and USD volume, all time and over the last 24 hours; two aggregate queries."""
    rows = Transaction.objects.filter(organization=organization)
    by_status = {row["status"]: row for row in rows.values("status").annotate(n=Count("pk"), usd=sum_usd())}
    day = rows.filter(created_at__gte=timezone.now() - timedelta(hours=24)).aggregate(
        n=Count("pk"),
        done=Count("pk", filter=Q(status="completed")),
        usd=sum_usd(filter=Q(status="completed")),
    )
    count = {status: by_status.get(status, {}).get("n", 0) for status in Transaction.Status.values}
    volume = by_status.get("completed", {}).get("usd") or Decimal(0)
    return {
        "object": "transaction_stats",
        "total_transactions": sum(count.values()),
        "completed_transactions": count["completed"],
        "failed_transactions": count["failed"],
        "pending_transactions": count["pending"] + count["confirming"],
        "total_volume_usd": f"{volume:.2f}",
        "last_24h": {
            "transactions": day["n"],
            "completed": day["done"],
            "volume_usd": f"{day['usd'] or Decimal(0):.2f}",
        },
        "status_breakdown": count,
    }


def sum_usd(**kwargs):
    """The sum of `amount_usd` as a decimal on every database (SQLite would answer a float)."""
    from django.db.models import DecimalField, Sum

    return Sum("amount_usd", output_field=DecimalField(max_digits=20, decimal_places=2), **kwargs)


def discount_code_list(
    *,
    organization: Organization,
    payment_link_id: str | None = None,
    active: bool | None = None,
    search: str | None = None,
) -> QuerySet[DiscountCode]:
    codes = DiscountCode.objects.filter(organization=organization, deleted_at__isnull=True)
    if payment_link_id:
        codes = codes.filter(payment_link_id=payment_link_id)
    if active is not None:
        codes = codes.filter(is_active=active)
    if search:
        codes = codes.filter(code__icontains=search)
    return codes
