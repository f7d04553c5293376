"""The order interface's checkout sessions (`/checkout-sessions`, UUID ids), and the order interface's orders.

A session made on the order interface is a `checkout.CheckoutSession` like the platform's, made
`created_through="order_interface"`: it names no token, chain or recipient (the order that pays it does, and
names it by `Order.checkout_session_id`; one order each). It is `open` until its order is paid
(`processing`), then `completed` when the order executes (this interface says `complete`); it `expired` when
its time ran out (the one expiry, `checkout.sessions.sessions_expire_due`), when asked, or when its order
failed or expired unpaid. `checkout.completed` and `checkout.expired` tell the merchant, in the one body of
each (`checkout.payloads`).

The order interface's orders (`Order.owner == ""`, `orders.events.OrderOwner.INTERFACE`) are followed here,
as the checkout follows its own (`checkout.subscribers`): first the session, then `payment.completed` or
`payment.failed`.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from checkout.models import CheckoutSession
from checkout.payloads import checkout_completed_data
from checkout.sessions import session_expire
from checkout.states import SESSION
from core.errors import Conflict, InvalidRequest
from orders import events
from orders.models import Order
from orders.representations import iso
from orders.selectors import payment_seen
from platform_api.models import Organization
from webhooks.events import EventType, Payment, PaymentOutcome, emit_event, emit_payment

OWN = events.OrderOwner.INTERFACE
Status = CheckoutSession.Status

# The order interface's words for the one session's statuses (its contract says `complete`; an interface
# session's failed order expires it, so it is never `failed`).
SHOWN_STATUS: dict[str, str] = {Status.COMPLETED: "complete", Status.FAILED: "expired"}


def shown_status(session: CheckoutSession) -> str:
    return SHOWN_STATUS.get(session.status, session.status)


def session_data(session: CheckoutSession) -> dict[str, Any]:
    """The session as the order interface shows it."""
    return {
        "id": session.id,
        "status": shown_status(session),
        "success_url": session.success_url or None,
        "cancel_url": session.cancel_url or None,
        "metadata": session.metadata,
        "client_reference_id": session.client_reference_id or None,
        "expires_at": iso(session.expires_at),
        "created_at": iso(session.created_at),
    }


def interface_session_create(
    *,
    organization: Organization | None,
    success_url: str | None = None,
    cancel_url: str | None = None,
    metadata: dict | None = None,
    client_reference_id: str | None = None,
    expires_in: int = 1800,
) -> CheckoutSession:
    now = timezone.now()
    return CheckoutSession.objects.create(
        id=str(uuid.uuid4()),
        created_through=CheckoutSession.CreatedThrough.ORDER_INTERFACE,
        organization=organization,
        success_url=success_url or "",
        cancel_url=cancel_url or "",
        metadata=metadata or {},
        client_reference_id=client_reference_id or "",
        created_at=now,
        updated_at=now,
        expires_at=now + timedelta(seconds=expires_in),
    )


def interface_session_get(session_id: uuid.UUID) -> CheckoutSession | None:
    return CheckoutSession.objects.order_interface().filter(pk=str(session_id)).first()


def interface_session_expire(session_id: uuid.UUID) -> CheckoutSession | None:
    """`POST /checkout-sessions/{id}/expire`: None unless it was an open session of this interface."""
    if interface_session_get(session_id) is None:
        return None
    return session_expire(session_id=str(session_id), reason="expired_by_request")


def order_for_session(session_id: str) -> Order | None:
    return Order.objects.filter(checkout_session_id=session_id).first()


@events.session_binder
def bind_interface_session(
    session_id: str, organization: Organization | None, *, lock: bool
) -> Organization | None:
    """An order interface order may pay an open session of this interface (its key's, or one made without a
    key) that no other order pays; it belongs to the key's organization, else the session's."""
    sessions = CheckoutSession.objects.order_interface()
    if lock:
        sessions = sessions.select_for_update()
    session = sessions.filter(pk=session_id).first()
    if session is None or (organization and session.organization_id not in (None, organization.pk)):
        raise InvalidRequest(f"no checkout session {session_id}.", field="checkoutSessionId")
    if session.status != Status.OPEN or session.expires_at <= timezone.now():
        raise InvalidRequest(
            f"checkout session {session.pk} is {shown_status(session)}, not open.", field="checkoutSessionId"
        )
    if Order.objects.filter(checkout_session_id=session.pk).exists():
        raise Conflict(f"checkout session {session.pk} already has an order.", field="checkoutSessionId")
    return organization or session.organization


# --- the session follows its order ----------------------------------------------------------------------


def _move(session_id: str, *, from_status: str, to_status: str, **fields) -> bool:
    """One conditional update; False if the session was not in `from_status`."""
    return bool(
        SESSION.move(
            CheckoutSession.objects.filter(pk=session_id),
            from_=(from_status,),
            to=to_status,
            updated_at=timezone.now(),
            **fields,
        )
    )


@events.on(events.Locking, owner=OWN)
def on_locking(event: events.Locking) -> None:
    if event.order.checkout_session_id:
        CheckoutSession.objects.select_for_update().filter(pk=event.order.checkout_session_id).first()


@events.on(events.Paid, owner=OWN)
def on_paid(event: events.Paid) -> None:
    if event.order.checkout_session_id:
        _move(event.order.checkout_session_id, from_status=Status.OPEN, to_status=Status.PROCESSING)


@events.on(events.Executed, owner=OWN)
def on_executed(event: events.Executed) -> None:
    order = event.order
    session_id = order.checkout_session_id
    if session_id and _move(
        session_id, from_status=Status.PROCESSING, to_status=Status.COMPLETED, completed_at=timezone.now()
    ):
        session = CheckoutSession.objects.select_related("organization").get(pk=session_id)
        emit_event(
            organization=session.organization,
            event_type=EventType.CHECKOUT_COMPLETED,
            subject=session.id,
            data=checkout_completed_data(session, order_payment(order, session)),
        )


@events.on(events.Failed, owner=OWN)
def on_failed(event: events.Failed) -> None:
    if event.order.checkout_session_id:
        session_expire(
            session_id=event.order.checkout_session_id,
            reason="order_failed",
            from_statuses=(Status.OPEN, Status.PROCESSING),
        )


@events.on(events.Expired, owner=OWN)
def on_expired(event: events.Expired) -> None:
    if event.order.checkout_session_id:
        session_expire(session_id=event.order.checkout_session_id, reason="order_expired")


# --- the merchant is told of the payment ----------------------------------------------------------------


def order_payment(order: Order, session: CheckoutSession | None = None) -> Payment:
    """An order of the order interface as a payment: what the payer sent, and its first deposit."""
    if session is None and order.checkout_session_id:
        session = CheckoutSession.objects.filter(pk=order.checkout_session_id).first()
    sender, tx_hash = payment_seen(order)
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
        session_id=session.pk if session else None,
        client_reference_id=(session.client_reference_id or None) if session else order.client_reference_id,
        metadata=session.metadata if session else {},
    )


@events.on(events.Executed, owner=OWN)
def on_payment_delivered(event: events.Executed) -> None:
    order = event.order
    emit_payment(
        organization=order.organization, outcome=PaymentOutcome.DELIVERED, payment=order_payment(order)
    )


@events.on(events.Failed, owner=OWN)
def on_payment_failed(event: events.Failed) -> None:
    if not event.refunding:  # nothing was paid: this is the end; otherwise `Refunded` tells
        _payment_failed(event.order, error=event.error, refund_tx_hash=None, outcome=PaymentOutcome.UNPAID)


@events.on(events.Refunded, owner=OWN)
def on_payment_refunded(event: events.Refunded) -> None:
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
