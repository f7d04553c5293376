"""An x402 settlement's status machine (core.machines)."""

from __future__ import annotations

from core.machines import Machine
from facilitator.models import Settlement

S = Settlement.Status
SETTLEMENT = Machine(
    "facilitator.Settlement.status",
    moves={
        S.PENDING: {S.INCLUDED, S.SETTLED, S.FAILED},
        S.INCLUDED: {S.SETTLED, S.FAILED},
        S.SETTLED: {S.FAILED},
        S.FAILED: {S.SETTLED},
    },
    initial=(S.PENDING, S.SETTLED),
    meanings={
        S.PENDING: "its authorization is asked of the outbox, not in a block yet",
        S.INCLUDED: "in a block and successful there; a settle request waiting on it answers",
        S.SETTLED: "confirmed (or found settled by someone else's transaction with the same authorization); "
        "failed if a reorg took its transaction away and it then failed",
        S.FAILED: "not sent (it would revert) or reverted: nothing moved; settled if another transaction "
        "with the same authorization is found mined",
    },
)
