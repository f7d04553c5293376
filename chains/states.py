"""The chains' status machines (core.machines): a deposit the watcher saw, an outbox transaction."""

from __future__ import annotations

from chains.models import Deposit, OutboxTx
from core.machines import Machine

D = Deposit.Status
DEPOSIT = Machine(
    "chains.Deposit.status",
    moves={
        D.CONFIRMED: {D.ORPHANED, D.UNLISTED},
        D.UNLISTED: {D.ORPHANED, D.CONFIRMED},
        D.ORPHANED: {D.CONFIRMED, D.UNLISTED, D.WITHDRAWN},
        D.WITHDRAWN: {D.CONFIRMED, D.UNLISTED},
    },
    initial=(D.CONFIRMED, D.UNLISTED),
    announces={D.CONFIRMED: "handed to its owner", D.WITHDRAWN: "handed to its owner"},
    meanings={
        D.CONFIRMED: "in a block of the chain (seen again in another block after a reorg: the same deposit)",
        D.UNLISTED: "a token the registry does not list: held for staff, never swept or refunded",
        D.ORPHANED: "its block left the chain; waiting REORG_GRACE_BLOCKS to see it again",
        D.WITHDRAWN: "not seen again: it no longer counts (seen later, it is handed over again)",
    },
)

T = OutboxTx.Status
IN_FLIGHT = (T.QUEUED, T.SIGNED, T.BROADCAST)
OUTBOX = Machine(
    "chains.OutboxTx.status",
    moves={
        T.QUEUED: {T.SIGNED, T.BROADCAST, T.MINED, T.FAILED},
        T.SIGNED: {T.BROADCAST, T.MINED, T.FAILED},
        T.BROADCAST: {T.SIGNED, T.QUEUED, T.MINED, T.FAILED},
        T.MINED: {T.BROADCAST},
        T.FAILED: set(),
    },
    initial=(T.QUEUED, T.BROADCAST),
    announces={T.MINED: "its key's outbox handler", T.FAILED: "its key's outbox handler"},
    meanings={
        T.QUEUED: "asked for under its business key; not signed yet",
        T.SIGNED: "signed at its nonce (a fee bump signs it again)",
        T.BROADCAST: "sent, waiting to be mined with the chain's confirmations (adopted after a restore: found "
        "on chain); signed again with a higher fee, or queued again when its nonce was taken",
        T.MINED: "mined and succeeded; back to broadcast if its block leaves the chain",
        T.FAILED: "reverted, or would revert, or its nonce was filled: it never moves again",
    },
)
