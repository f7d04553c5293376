"""The checkout's status machines (core.machines): a checkout session, a merchant's transaction."""

from __future__ import annotations

from checkout.models import CheckoutSession, Transaction
from core.machines import Machine

S = CheckoutSession.Status
SESSION = Machine(
    "checkout.CheckoutSession.status",
    moves={
        S.OPEN: {S.PROCESSING, S.COMPLETED, S.EXPIRED},
        S.PROCESSING: {S.COMPLETED, S.FAILED, S.EXPIRED},
        S.COMPLETED: set(),
        S.EXPIRED: set(),
        S.FAILED: set(),
    },
    initial=(S.OPEN,),
    announces={S.COMPLETED: "checkout.session.completed", S.EXPIRED: "checkout.session.expired"},
    meanings={
        S.OPEN: "waiting for its payer",
        S.PROCESSING: "paid in full: being delivered",
        S.COMPLETED: "the merchant was paid",
        S.EXPIRED: "not paid in time, expired by request, or its link was deleted",
        S.FAILED: "its payment failed, and what came is back with the payer",
    },
)

T = Transaction.Status
TRANSACTION = Machine(
    "checkout.Transaction.status",
    moves={
        T.PENDING: {T.CONFIRMING, T.COMPLETED, T.FAILED},
        T.CONFIRMING: {T.COMPLETED, T.FAILED},
        T.COMPLETED: set(),
        T.FAILED: set(),
    },
    initial=(T.PENDING, T.CONFIRMING),
    announces={T.COMPLETED: "payment.delivered", T.FAILED: "payment.failed"},
    meanings={
        T.PENDING: "a deposit was seen, not yet the whole amount",
        T.CONFIRMING: "paid in full: being delivered",
        T.COMPLETED: "delivered to the merchant",
        T.FAILED: "not delivered: what came is back with the payer",
    },
)
