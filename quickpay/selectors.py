"""Reads of quick payments: by id, for whoever has it."""

from __future__ import annotations

from core.errors import NotFound
from quickpay.models import QuickPayment


def quick_payment_get(*, payment_id: str) -> QuickPayment:
    """A quick payment by its id, for anyone who has the id (it is the capability: ~142 random bits)."""
    payment = QuickPayment.objects.filter(pk=payment_id).first()
    if payment is None:
        raise NotFound(f"No quick_payment with id '{payment_id}'.")
    return payment
