"""The order interface's checkout sessions: create, expire, and follow the order that pays one.

A session is `open` until its order is paid (`processing`), then `complete`
when the order executes; it `expired` when its time ran out, when asked, or
when its order failed or expired unpaid. `checkout.completed` and
`checkout.expired` tell the merchant. The session follows its order through
the order's events (`receivers`, subscribed in `orders.apps`).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from orders import events
from orders.lifecycle import WAITING, order_expire
from orders.models import CheckoutSession, Order
from orders.representations import session_event_data
from platform_api.models import Organization
from webhooks.events import EventType, emit_event


def checkout_session_create(
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
        organization=organization,
        success_url=success_url,
        cancel_url=cancel_url,
        metadata=metadata or {},
        client_reference_id=client_reference_id or None,
        created_at=now,
        expires_at=now + timedelta(seconds=expires_in),
    )


def _session_transition(session_id, *, from_status: str | tuple[str, ...], to_status: str, **fields) -> bool:
    """Move a session between states with one conditional update; False if it was not in `from_status`."""
    statuses = (from_status,) if isinstance(from_status, str) else from_status
    changed = CheckoutSession.objects.filter(pk=session_id, status__in=statuses).update(
        status=to_status, **fields
    )
    return changed == 1


@transaction.atomic
def checkout_session_expire(
    *, session_id: uuid.UUID, reason: str = "expired", from_statuses: tuple[str, ...] = ("open",)
) -> CheckoutSession | None:
    """Expire a session and emit `checkout.expired`; None if it was not in `from_statuses` (or is gone).

    Its order stops too: an order still waiting for its deposit is `expired`,
    so a deposit that arrives later is refunded, never executed. The session's
    row is locked first, as a deposit to its order does (`Locking`), so a
    deposit and the expiry never both win.
    """
    locked = (
        CheckoutSession.objects.select_for_update().filter(pk=session_id, status__in=from_statuses).first()
    )
    if locked is None:
        return None
    _session_transition(session_id, from_status=from_statuses, to_status="expired", expired_at=timezone.now())
    order = Order.objects.filter(checkout_session_id=session_id, status__in=WAITING).first()
    if order is not None:
        order_expire(order=order, reason=f"its checkout session expired ({reason})", announce=False)
    session = CheckoutSession.objects.select_related("organization").get(pk=session_id)
    emit_event(
        organization=session.organization,
        event_type=EventType.CHECKOUT_EXPIRED,
        data=session_event_data(session) | {"reason": reason},
    )
    return session


def checkout_sessions_expire_due(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Expire every open session past its `expires_at` (the periodic task and the command call this)."""
    now = now or timezone.now()
    expired = 0
    while True:
        due = CheckoutSession.objects.filter(status="open", expires_at__lte=now).values_list("pk", flat=True)
        batch = list(due[:batch_size])
        for session_id in batch:
            if checkout_session_expire(session_id=session_id, reason="timeout"):
                expired += 1
        if len(batch) < batch_size:
            return expired


# --- the session follows its order (subscribed in orders.apps) ------------------------------


@events.on(events.Locking, owner=events.OrderOwner.INTERFACE)
def on_locking(event: events.Locking) -> None:
    if event.order.checkout_session_id:
        CheckoutSession.objects.select_for_update().filter(pk=event.order.checkout_session_id).first()


@events.on(events.Paid, owner=events.OrderOwner.INTERFACE)
def on_paid(event: events.Paid) -> None:
    if event.order.checkout_session_id:
        _session_transition(event.order.checkout_session_id, from_status="open", to_status="processing")


@events.on(events.Executed, owner=events.OrderOwner.INTERFACE)
def on_executed(event: events.Executed) -> None:
    order = event.order
    if not order.checkout_session_id:
        return
    if _session_transition(
        order.checkout_session_id, from_status="processing", to_status="complete", completed_at=timezone.now()
    ):
        session = CheckoutSession.objects.select_related("organization").get(pk=order.checkout_session_id)
        emit_event(
            organization=session.organization,
            event_type=EventType.CHECKOUT_COMPLETED,
            data=session_event_data(session) | {"order_id": str(order.id)},
        )


@events.on(events.Failed, owner=events.OrderOwner.INTERFACE)
def on_failed(event: events.Failed) -> None:
    if event.order.checkout_session_id:
        checkout_session_expire(
            session_id=event.order.checkout_session_id,
            reason="order_failed",
            from_statuses=("open", "processing"),
        )


@events.on(events.Expired, owner=events.OrderOwner.INTERFACE)
def on_expired(event: events.Expired) -> None:
    if event.order.checkout_session_id:
        checkout_session_expire(session_id=event.order.checkout_session_id, reason="order_expired")
