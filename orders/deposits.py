"""What a deposit the chain watcher saw (or, after a reorg, withdrew) means for an order.

Registered with `chains.handlers` when the app is ready (`orders.apps`).
"""

from __future__ import annotations

import logging
import uuid

from chains.handlers import PaymentDue, deposit_handler, payable
from chains.keys import OwnerKind, owner_id
from chains.models import Deposit
from orders.lifecycle import order_record_deposit, order_withdraw_deposit
from orders.models import Order
from orders.settlement import enqueue_settlement

logger = logging.getLogger(__name__)


@deposit_handler(OwnerKind.ORDER)
def order_deposit_changed(deposit: Deposit) -> None:
    """Called in the transaction that records the deposit, or withdraws it (or retries either); idempotent."""
    identifier = owner_id(deposit.owner)
    if deposit.status == Deposit.Status.WITHDRAWN:
        _order_deposit_withdrawn(deposit, identifier)
    else:
        _order_deposit(deposit, identifier)


def _order_deposit_withdrawn(deposit: Deposit, identifier: str) -> None:
    order = Order.objects.filter(pk=uuid.UUID(identifier)).first()
    if order is not None:
        order_withdraw_deposit(order=order, deposit_id=deposit.pk)
        enqueue_settlement(order.pk)


def _order_deposit(deposit: Deposit, identifier: str) -> None:
    order = Order.objects.filter(pk=uuid.UUID(identifier)).first()
    if order is None:
        logger.warning("Deposit %s: its order %s is gone", deposit.pk, identifier)
        return
    order = order_record_deposit(
        order=order,
        chain=deposit.chain_id,
        tx_hash=deposit.tx_hash,
        amount=int(deposit.amount),
        from_address=deposit.from_address,
        log_index=deposit.log_index,
        block_number=deposit.block_number,
        block_hash=deposit.block_hash,
        token=deposit.token,
        deposit_id=deposit.pk,
    )
    enqueue_settlement(order.pk)  # settle it, or refund what it did not count


@payable(OwnerKind.ORDER)
def order_due(identifier: str) -> PaymentDue | None:
    """What an order asks its payer for (the devnet wallet pays it)."""
    try:
        order = Order.objects.filter(pk=uuid.UUID(identifier)).first()
    except ValueError:
        return None
    if order is None:
        return None
    return order.src_chain, order.src_token_address, order.global_address, int(order.src_amount)
