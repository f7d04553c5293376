"""The transaction outbox: every on-chain transaction the service sends, sent once.

- `send`: asking for a transaction by business key (`outbox_submit`, `outbox_transfer`), signing it once
  and broadcasting it (`outbox_send`), recording how it ended;
- `sweeps`: a deposit address's sweep into the vault (`outbox_sweep`) and what a sweep moved;
- `fees`: the fee market a signature is made with, capped per chain, bumped for a stuck transaction;
- `receipts`: what the chain says of a transaction (its receipt, logs, head; calls in one JSON-RPC batch);
- `poll`: the periodic look at what is in flight (receipts, rebroadcasts, capped fee bumps, lost sends, a
  nonce taken by another transaction);
- `repair`: what a reorg or a dropped transaction leaves behind (finished transactions that left the chain,
  nonces that nothing holds);
- `adopt`: a signer's transactions on a chain that the database does not hold (restored from a backup),
  found and taken by the transactions they were, so that nothing is sent twice.
"""

from chains.outbox.poll import (
    outbox_check,
    outbox_check_receipts,
    outbox_finish,
    outbox_included_now,
    outbox_poll,
)
from chains.outbox.receipts import rpc_batch, succeeded_in_block
from chains.outbox.send import (
    OutboxConflict,
    outbox_send,
    outbox_submit,
    outbox_transfer,
    outbox_wait,
    still_in_flight,
)
from chains.outbox.sweeps import outbox_sweep, sweep_covers, swept_amount, swept_in_block, swept_of

__all__ = [
    "OutboxConflict",
    "outbox_check",
    "outbox_check_receipts",
    "outbox_finish",
    "outbox_included_now",
    "outbox_poll",
    "outbox_send",
    "outbox_submit",
    "outbox_sweep",
    "outbox_transfer",
    "outbox_wait",
    "rpc_batch",
    "still_in_flight",
    "succeeded_in_block",
    "sweep_covers",
    "swept_amount",
    "swept_in_block",
    "swept_of",
]
