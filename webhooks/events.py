"""The one entry point for business events that merchants learn about through webhooks."""

from __future__ import annotations

from typing import Any

from platform_api.models import Organization
from webhooks.models import WebhookEvent

EVENT_TYPES = ("payment.completed", "payment.failed", "checkout.completed", "checkout.expired")


def emit_event(
    *, organization: Organization | None, event_type: str, data: dict[str, Any]
) -> WebhookEvent | None:
    """Record `event_type` for the organization, in the caller's transaction.

    Anonymous resources (no organization) have no endpoints, so nothing is
    recorded for them. Delivery to the organization's endpoints is attached
    here by the webhooks feature.
    """
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    if organization is None:
        return None
    return WebhookEvent.objects.create(organization=organization, event_type=event_type, data=data)
