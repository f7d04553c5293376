"""What a deposit the chain watcher saw means for its owner (CHAIN_DEPOSIT_HANDLER)."""

from __future__ import annotations

import logging
import uuid

from chains.models import Deposit
from orders.models import Order
from orders.services import order_record_deposit

logger = logging.getLogger(__name__)


def deposit_received(deposit: Deposit) -> None:
    """Called in the transaction that records the deposit (or retries it); idempotent."""
    kind, _, identifier = deposit.owner.partition(":")
    if kind != "order":
        logger.info("Deposit %s to %s: no handler for %r yet", deposit.pk, deposit.to_address, kind)
        return
    order = Order.objects.filter(pk=uuid.UUID(identifier)).first()
    if order is None:
        logger.warning("Deposit %s: its order %s is gone", deposit.pk, identifier)
        return
    order_record_deposit(
        order=order,
        chain=deposit.chain_id,
        tx_hash=deposit.tx_hash,
        amount=int(deposit.amount),
        from_address=deposit.from_address,
        log_index=deposit.log_index,
        block_number=deposit.block_number,
        block_hash=deposit.block_hash,
        token=deposit.token,
    )
