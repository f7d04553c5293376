"""The refunds' status machines (core.machines): a merchant's refund, a withdrawal of the refund balance."""

from __future__ import annotations

from core.machines import Machine
from refunds.models import Refund, RefundWithdrawal
from webhooks.kinds import EventType

R = Refund.Status
REFUND = Machine(
    "refunds.Refund.status",
    moves={
        R.REQUIRES_FUNDING: {R.PENDING, R.CANCELED},
        R.PENDING: {R.SUCCEEDED, R.FAILED},
        R.SUCCEEDED: set(),
        R.FAILED: set(),
        R.CANCELED: set(),
    },
    initial=(R.REQUIRES_FUNDING, R.PENDING),
    announces={
        R.PENDING: EventType.REFUND_UPDATED,
        R.SUCCEEDED: EventType.REFUND_SUCCEEDED,
        R.FAILED: EventType.REFUND_FAILED,
        R.CANCELED: EventType.REFUND_UPDATED,
    },
    meanings={
        R.REQUIRES_FUNDING: "waiting for its funding at its own deposit address",
        R.PENDING: "funded (from the refund balance, or its deposit): being delivered",
        R.SUCCEEDED: "the payer holds it: the delivery is mined",
        R.FAILED: "the delivery failed on chain: the amount went to the refund balance",
        R.CANCELED: "canceled before it was funded (by the merchant, or its funding time passed)",
    },
)

W = RefundWithdrawal.Status
WITHDRAWAL = Machine(
    "refunds.RefundWithdrawal.status",
    moves={W.PENDING: {W.SUCCEEDED, W.FAILED}, W.SUCCEEDED: set(), W.FAILED: set()},
    initial=(W.PENDING,),
    meanings={
        W.PENDING: "asked of the outbox",
        W.SUCCEEDED: "mined: the balance went to its address",
        W.FAILED: "failed on chain: the amount is back in the balance",
    },
)
