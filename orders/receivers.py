"""What the orders app itself does when one of its own orders (owner `""`, the order interface's) moves on:
its checkout session follows it, and the merchant is told of the payment. Connected in `orders.apps`."""

from __future__ import annotations

from orders import events
from orders.models import Order
from webhooks.events import Payment, PaymentOutcome, emit_payment

OWN = events.OrderOwner.INTERFACE  # the order interface's orders: no app above owns them


def order_payment(order: Order) -> Payment:
    """An order of the order interface as a payment: what the payer sent, and its first deposit."""
    session = order.checkout_session
    sender, tx_hash = order.deposit_txs.order_by("pk").values_list("from_address", "tx_hash").first() or (
        None,
        None,
    )
    return Payment(
        id=str(order.id),
        order_id=str(order.id),
        amount=int(order.src_amount),
        token_address=order.src_token_address,
        chain_id=order.src_chain,
        sender_address=sender,
        recipient_address=order.recipient_address,
        tx_hash=tx_hash,
        status=order.status,
        created_at=order.created_at,
        completed_at=order.filled_at,
        session_id=str(session.pk) if session else None,
        client_reference_id=session.client_reference_id if session else order.client_reference_id,
        metadata=session.metadata if session else {},
    )


@events.on(events.Executed, owner=OWN)
def _executed(event: events.Executed) -> None:
    order = event.order
    emit_payment(
        organization=order.organization, outcome=PaymentOutcome.DELIVERED, payment=order_payment(order)
    )


@events.on(events.Failed, owner=OWN)
def _failed(event: events.Failed) -> None:
    if not event.refunding:  # nothing was paid: this is the end; otherwise `Refunded` tells
        _payment_failed(event.order, error=event.error, refund_tx_hash=None, outcome=PaymentOutcome.UNPAID)


@events.on(events.Refunded, owner=OWN)
def _refunded(event: events.Refunded) -> None:
    _payment_failed(
        event.order, error=event.error, refund_tx_hash=event.refund_tx_hash, outcome=PaymentOutcome.REFUNDED
    )


def _payment_failed(order: Order, *, error: str, refund_tx_hash: str | None, outcome: PaymentOutcome) -> None:
    emit_payment(
        organization=order.organization,
        outcome=outcome,
        payment=order_payment(order),
        error=error,
        refund_tx_hash=refund_tx_hash,
    )
