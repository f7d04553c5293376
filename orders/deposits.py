"""What a deposit the chain watcher saw (or, after a reorg, withdrew) means for an order or a quick payment.

Registered with `chains.handlers` when the app is ready (`orders.apps`).
"""

from __future__ import annotations

import logging
import uuid

from chains.handlers import deposit_handler
from chains.models import Deposit
from orders.lifecycle import order_record_deposit, order_withdraw_deposit
from orders.models import Order
from orders.settlement import enqueue_settlement
from platform_api.services import (
    QUICK_PAYMENT_OWNER,
    enqueue_quick_payment_settlement,
    quick_payment_record_deposit,
    quick_payment_withdraw_deposit,
)
from webhooks.events import Payment, emit_event, payment_completed_data

logger = logging.getLogger(__name__)


@deposit_handler("order")
def order_deposit_changed(deposit: Deposit) -> None:
    """Called in the transaction that records the deposit, or withdraws it (or retries either); idempotent."""
    identifier = deposit.owner.partition(":")[2]
    if deposit.status == Deposit.Status.WITHDRAWN:
        _order_deposit_withdrawn(deposit, identifier)
    else:
        _order_deposit(deposit, identifier)


@deposit_handler(QUICK_PAYMENT_OWNER)
def quick_payment_deposit_changed(deposit: Deposit) -> None:
    """Called in the transaction that records the deposit, or withdraws it (or retries either); idempotent."""
    identifier = deposit.owner.partition(":")[2]
    if deposit.status == Deposit.Status.WITHDRAWN:
        quick_payment_withdraw_deposit(payment_id=identifier, deposit_id=deposit.pk)
        enqueue_quick_payment_settlement(identifier)
    else:
        _quick_payment_deposit(deposit, identifier)


def _order_deposit_withdrawn(deposit: Deposit, identifier: str) -> None:
    order = Order.objects.filter(pk=uuid.UUID(identifier)).first()
    if order is not None:
        order_withdraw_deposit(order=order, deposit_id=deposit.pk)
        enqueue_settlement(order.pk)


def _quick_payment_deposit(deposit: Deposit, payment_id: str) -> None:
    paid = quick_payment_record_deposit(
        payment_id=payment_id,
        token=deposit.token,
        amount=int(deposit.amount),
        from_address=deposit.from_address,
        tx_hash=deposit.tx_hash,
        deposit_id=deposit.pk,
    )
    enqueue_quick_payment_settlement(payment_id)  # the payout, or what goes back
    if paid is None:
        return
    data = payment_completed_data(
        Payment(
            id=paid.id,
            amount=int(paid.amount),
            token_address=paid.token_address,
            chain_id=paid.chain_id,
            sender_address=paid.payer_address or None,
            recipient_address=paid.recipient_address,
            tx_hash=paid.tx_hash or None,
            status="completed",
            created_at=paid.created_at,
            completed_at=paid.paid_at,
        )
    )
    emit_event(organization=paid.organization, event_type="payment.completed", data=data)  # anonymous: nobody


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
