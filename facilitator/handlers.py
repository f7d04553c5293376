"""What the outbox tells the x402 facilitator about its `x402:<id>:settle` transactions."""

from __future__ import annotations

from chains.handlers import outbox_handler, outbox_included_handler
from chains.keys import OwnerKind
from chains.models import OutboxTx
from facilitator.outcomes import settlement_finished, settlement_included


@outbox_included_handler(OwnerKind.X402)
def x402_settlement_included(tx: OutboxTx) -> None:
    settlement_included(tx)


@outbox_handler(OwnerKind.X402)
def x402_settlement_finished(tx: OutboxTx) -> None:
    settlement_finished(tx)
