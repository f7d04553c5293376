"""A quick payment's status machine (core.machines)."""

from __future__ import annotations

from core.machines import Machine
from quickpay.models import QuickPayment

Q = QuickPayment.Status
QUICK_PAYMENT = Machine(
    "quickpay.QuickPayment.status",
    moves={Q.AWAITING_PAYMENT: {Q.PAID, Q.EXPIRED}, Q.PAID: set(), Q.EXPIRED: set()},
    initial=(Q.AWAITING_PAYMENT,),
    announces={Q.PAID: "quick_payment_progressed (received)"},
    meanings={
        Q.AWAITING_PAYMENT: "waiting for its amount at its deposit address; deposits add up",
        Q.PAID: "its amount arrived: swept, then paid out to its recipient",
        Q.EXPIRED: "not paid in time: what arrived goes back to its senders",
    },
)
