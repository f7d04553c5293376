"""The one entry point for business events that merchants learn about through webhooks."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.tasks import Later
from platform_api.models import Organization
from webhooks.kinds import EVENT_TYPES, EventType
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.notifications import notify

DELIVER_EVENT_WEBHOOKS = Later("webhooks.tasks.deliver_event_webhooks")


def delivery_body(
    *, event_type: str, endpoint_id: str, timestamp: str, data: dict[str, Any], livemode: bool
) -> str:
    """The body of a delivery, serialized once: it is stored and these exact bytes are signed and sent.
    `livemode` is false for a test-mode organization's (platform_api.testmode)."""
    return json.dumps(
        {
            "event": event_type,
            "webhook_id": endpoint_id,
            "timestamp": timestamp,
            "livemode": livemode,
            "data": data,
        },
        separators=(",", ":"),
        sort_keys=True,
    )


@dataclass(frozen=True)
class Payment:
    """A payment as merchants are told of it, whatever paid it (an order of the order interface, a payment
    link's or checkout session's order, a quick payment): the fields of `payment.completed`."""

    id: str
    amount: int
    token_address: str
    chain_id: int
    recipient_address: str
    status: str
    created_at: datetime
    completed_at: datetime | None = None
    sender_address: str | None = None
    tx_hash: str | None = None
    payment_link_id: str | None = None
    order_id: str | None = None
    form_data: dict[str, Any] = field(default_factory=dict)
    discount_code: str | None = None
    session_id: str | None = None
    client_reference_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    customer_email: str | None = None
    customer_name: str | None = None


def _millis(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def payment_completed_data(payment: Payment) -> dict[str, Any]:
    """`data` of `payment.completed`: the one shape, for every kind of payment. Times in ms since the epoch,
    as everywhere in the platform interface."""
    return {
        "id": payment.id,
        "payment_link_id": payment.payment_link_id,
        "order_id": payment.order_id,
        "amount": str(payment.amount),
        "token_address": payment.token_address,
        "chain_id": payment.chain_id,
        "sender_address": payment.sender_address or None,
        "recipient_address": payment.recipient_address,
        "tx_hash": payment.tx_hash or None,
        "status": payment.status,
        "form_data": payment.form_data or {},
        "discount_code": payment.discount_code,
        "created_at": _millis(payment.created_at),
        "completed_at": _millis(payment.completed_at),
        "checkoutSession": {
            "id": payment.session_id,
            "clientReferenceId": payment.client_reference_id or None,
            "metadata": payment.metadata or {},
            "customerEmail": payment.customer_email or None,
            "customerName": payment.customer_name or None,
        },
    }


def payment_failed_data(payment: Payment, *, error: str, refund_tx_hash: str | None) -> dict[str, Any]:
    """`data` of `payment.failed`: `payment.completed`'s shape, with why it failed and the refund's hash."""
    return payment_completed_data(payment) | {"error": error, "refund_tx_hash": refund_tx_hash}


class PaymentOutcome(StrEnum):
    """How a payment of any kind ends, as the merchant is told: the one mapping from each kind's lifecycle
    (an order, a link's session, a quick payment) to `payment.completed` / `payment.failed`."""

    DELIVERED = "delivered"  # the merchant's recipient has the money: an order executed, a payout mined
    REFUNDED = "refunded"  # what the payer sent is back with them (the refund's hash is in the event)
    UNPAID = "unpaid"  # it cannot complete and nothing was paid: nothing to give back


PAYMENT_EVENTS: dict[PaymentOutcome, EventType] = {
    PaymentOutcome.DELIVERED: EventType.PAYMENT_COMPLETED,
    PaymentOutcome.REFUNDED: EventType.PAYMENT_FAILED,
    PaymentOutcome.UNPAID: EventType.PAYMENT_FAILED,
}


def emit_payment(
    *,
    organization: Organization | None,
    outcome: PaymentOutcome,
    payment: Payment,
    error: str = "",
    refund_tx_hash: str | None = None,
    subject: str = "",
) -> WebhookEvent | None:
    """Tell the merchant how `payment` ended, at the moment it ended (delivered, or back with the payer)."""
    if outcome is PaymentOutcome.DELIVERED:
        data = payment_completed_data(payment)
    else:
        data = payment_failed_data(payment, error=error, refund_tx_hash=refund_tx_hash)
    return emit_event(
        organization=organization, event_type=PAYMENT_EVENTS[outcome], data=data, subject=subject
    )


def emit_event(
    *, organization: Organization | None, event_type: EventType, data: dict[str, Any], subject: str = ""
) -> WebhookEvent | None:
    """Record `event_type` and one delivery per subscribed active endpoint, in the caller's transaction.

    The deliveries are handed to workers only once that transaction commits, so
    a rolled-back business change sends nothing. Anonymous resources (no
    organization) have no endpoints, and nothing is recorded for them. An
    event about a checkout session names it as its `subject`, so that erasing
    a payer's personal data can find the event, its deliveries and its emails.
    """
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    if organization is None:
        return None
    now = timezone.now()
    event = WebhookEvent.objects.create(
        organization=organization,
        event_type=event_type,
        data=data,
        subject=subject,
        livemode=organization.livemode,
        created_at=now,
    )
    timestamp = now.isoformat().replace("+00:00", "Z")
    endpoints = WebhookEndpoint.objects.filter(organization=organization, is_active=True).order_by("pk")
    deliveries = [
        WebhookDelivery(
            endpoint=endpoint,
            event=event,
            event_type=event_type,
            body=delivery_body(
                event_type=event_type,
                endpoint_id=endpoint.id,
                timestamp=timestamp,
                data=data,
                livemode=event.livemode,
            ),
            next_attempt_at=now,
            created_at=now,
        )
        for endpoint in endpoints
        if endpoint.subscribes_to(event_type)
    ]
    WebhookDelivery.objects.bulk_create(deliveries)
    notify(organization=organization, event=event, event_type=event_type, data=data)
    if deliveries:
        # One message for the event, however many endpoints: the worker claims them together.
        transaction.on_commit(lambda: DELIVER_EVENT_WEBHOOKS.delay(event.pk))
    return event
