"""Where an order's delivery on its destination chain stands, as whoever delivers it says (orders/relays.py):
pending, delivered or failed, with the transactions to show as its relayTxs."""

from __future__ import annotations

from dataclasses import dataclass

from chains.models import OutboxTx
from orders.models import RelayTx

__all__ = ["DELIVERED", "FAILED", "PENDING", "Delivery"]

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


@dataclass(frozen=True)
class Delivery:
    """Where the relay step stands: pending, delivered or failed, with the relay transactions to show."""

    state: str
    txs: tuple[tuple[int, str, str], ...] = ()  # (chain, tx hash, RelayTx status)
    error: str = ""
    ours: bool = False  # the service's own transactions, mined: nothing to check on chain

    @classmethod
    def of(cls, tx: OutboxTx) -> Delivery:
        """The delivery that one outbox transaction makes."""
        if tx.in_flight:
            return cls(PENDING, ours=True)
        if tx.status == OutboxTx.Status.MINED:
            return cls(DELIVERED, ((tx.chain_id, tx.tx_hash, RelayTx.Status.SUCCESS),), ours=True)
        return cls(
            FAILED,
            ((tx.chain_id, tx.tx_hash, RelayTx.Status.FAILURE),) if tx.tx_hash else (),
            tx.error,
            ours=True,
        )
