"""The one entry point for business events that merchants learn about through webhooks."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from platform_api.models import Organization
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.notifications import notify

EVENT_TYPES = ("payment.completed", "payment.failed", "checkout.completed", "checkout.expired")
TEST_EVENT = "test.ping"


def delivery_body(*, event_type: str, endpoint_id: str, timestamp: str, data: dict[str, Any]) -> str:
    """The body of a delivery, serialized once: it is stored and these exact bytes are signed and sent."""
    return json.dumps(
        {"event": event_type, "webhook_id": endpoint_id, "timestamp": timestamp, "data": data},
        separators=(",", ":"),
        sort_keys=True,
    )


def payment_event_data(
    *,
    payment_id: str,
    amount: int,
    token_address: str,
    chain_id: int,
    sender_address: str | None,
    recipient_address: str,
    tx_hash: str | None,
    status: str,
    created_at: datetime,
    completed_at: datetime | None,
    client_reference_id: str | None = None,
    metadata: dict | None = None,
) -> dict[str, Any]:
    """`data` of `payment.completed` and `payment.failed`, whatever was paid (an order, a quick payment)."""
    return {
        "id": payment_id,
        "payment_link_id": None,
        "amount": str(amount),
        "token_address": token_address,
        "chain_id": chain_id,
        "sender_address": sender_address,
        "recipient_address": recipient_address,
        "tx_hash": tx_hash,
        "status": status,
        "form_data": {},
        "discount_code": None,
        "created_at": created_at.isoformat(),
        "completed_at": completed_at.isoformat() if completed_at else None,
        "checkoutSession": {
            "clientReferenceId": client_reference_id,
            "metadata": metadata or {},
            "customerEmail": None,
            "customerName": None,
        },
    }


def emit_event(
    *, organization: Organization | None, event_type: str, data: dict[str, Any], subject: str = ""
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
        organization=organization, event_type=event_type, data=data, subject=subject, created_at=now
    )
    timestamp = now.isoformat().replace("+00:00", "Z")
    endpoints = WebhookEndpoint.objects.filter(organization=organization, is_active=True).order_by("pk")
    deliveries = [
        WebhookDelivery(
            endpoint=endpoint,
            event=event,
            event_type=event_type,
            body=delivery_body(
                event_type=event_type, endpoint_id=endpoint.id, timestamp=timestamp, data=data
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
        from webhooks.tasks import deliver_webhook

        ids = [d.id for d in deliveries]
        transaction.on_commit(lambda: [deliver_webhook.delay(delivery_id) for delivery_id in ids])
    return event
