"""Reads of webhook endpoints and deliveries, always scoped to one organization."""

from __future__ import annotations

from django.db.models import QuerySet

from core.errors import NotFound
from platform_api.models import Organization
from platform_api.selectors import scoped_get
from webhooks.models import WebhookDelivery, WebhookEndpoint


def webhook_endpoint_list(*, organization: Organization) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(organization=organization).order_by("-created_at", "-pk")


def webhook_endpoint_get(*, organization: Organization, webhook_id: str) -> WebhookEndpoint:
    return scoped_get(
        WebhookEndpoint.objects.all(),
        organization=organization,
        resource_type="webhook",
        resource_id=webhook_id,
    )


def webhook_delivery_list(*, endpoint: WebhookEndpoint, limit: int) -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(endpoint=endpoint).order_by("-created_at", "-pk")[:limit])


def webhook_delivery_get(*, endpoint: WebhookEndpoint, delivery_id: str) -> WebhookDelivery:
    delivery = WebhookDelivery.objects.filter(endpoint=endpoint, pk=delivery_id).first()
    if delivery is None:
        raise NotFound(f"No delivery with id '{delivery_id}'.")
    return delivery
