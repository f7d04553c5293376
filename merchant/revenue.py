"""The revenue rollup: one row per organization, UTC day, link, chain and token, added to as payments
complete (the checkout calls `revenue_record` in the payment's transaction; `rebuild_revenue` recomputes
it from the checkout's transactions)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F

from merchant.models import RevenueDay


def revenue_record(
    *,
    organization_id: str,
    completed_at: datetime,
    payment_link_id: str | None,
    chain_id: int,
    token_address: str,
    amount_usd: Decimal,
) -> None:
    """Add one completed payment to its day's rollup row; call it in the transaction that completes it."""
    key = {
        "organization_id": organization_id,
        "day": completed_at.astimezone(UTC).date(),
        "payment_link_id": payment_link_id or "",
        "chain_id": chain_id,
        "token_address": token_address,
    }
    add = {"transactions": F("transactions") + 1, "amount_usd": F("amount_usd") + amount_usd}
    if RevenueDay.objects.filter(**key).update(**add):
        return
    try:
        with transaction.atomic():
            RevenueDay.objects.create(**key, transactions=1, amount_usd=amount_usd)
    except IntegrityError:  # another payment of the same key created the row first
        RevenueDay.objects.filter(**key).update(**add)
