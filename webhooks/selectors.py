"""Reads of webhook endpoints and deliveries, always scoped to one organization."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet
from django.utils import timezone

from core.errors import NotFound
from platform_api.models import Organization
from platform_api.selectors import scoped_get
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent


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


def _with_deliveries(events: QuerySet[WebhookEvent], *, attempts: bool = False) -> QuerySet[WebhookEvent]:
    deliveries = WebhookDelivery.objects.order_by("created_at", "pk")
    if attempts:
        deliveries = deliveries.prefetch_related(
            Prefetch("attempt_log", queryset=WebhookAttempt.objects.order_by("number", "pk"))
        )
    return events.prefetch_related(Prefetch("deliveries", queryset=deliveries))


def webhook_event_list(
    *,
    organization: Organization,
    event_type: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    delivered: bool | None = None,
    endpoint: str | None = None,
) -> QuerySet[WebhookEvent]:
    """The organization's events, with their deliveries (one more query for a page). `delivered`: whether any
    endpoint answered one of its deliveries with a 2xx; `endpoint`: events delivered (or tried) to it."""
    events = WebhookEvent.objects.filter(organization=organization)
    if event_type is not None:
        events = events.filter(event_type=event_type)
    if created_from is not None:
        events = events.filter(created_at__gte=created_from)
    if created_to is not None:
        events = events.filter(created_at__lte=created_to)
    if delivered is not None:
        succeeded = WebhookDelivery.objects.filter(
            event=OuterRef("pk"), status=WebhookDelivery.Status.SUCCESS
        )
        events = events.filter(Exists(succeeded) if delivered else ~Exists(succeeded))
    if endpoint is not None:
        events = events.filter(
            Exists(WebhookDelivery.objects.filter(event=OuterRef("pk"), endpoint_id=endpoint))
        )
    return _with_deliveries(events)


def webhook_event_get(*, organization: Organization, event_id: str, attempts: bool = False) -> WebhookEvent:
    return scoped_get(
        _with_deliveries(WebhookEvent.objects.all(), attempts=attempts),
        organization=organization,
        resource_type="webhook_event",
        resource_id=event_id,
    )


def webhook_events_after(
    *,
    organization: Organization,
    after: WebhookEvent | None,
    since: datetime | None,
    skip: set[str],
    types: list[str] | None,
    limit: int,
) -> list[WebhookEvent]:
    """The organization's events after `after` (by creation time, then id), oldest first, less `skip`: what a
    listener has not had yet. A transaction that committed late may hold an event older than `after`: the
    listener keeps `after` a few seconds behind what it has (`LISTEN_SETTLE_SECONDS`) and names the events it
    has since then in `skip`."""
    events = _with_deliveries(WebhookEvent.objects.filter(organization=organization))
    if after is not None:
        events = events.filter(
            Q(created_at__gt=after.created_at) | Q(created_at=after.created_at, pk__gt=after.pk)
        )
    if since is not None:
        events = events.filter(created_at__gte=since)
    if types:
        events = events.filter(event_type__in=types)
    if skip:
        events = events.exclude(pk__in=skip)
    return list(events.order_by("created_at", "pk")[:limit])


def webhook_events_wait(
    *,
    organization: Organization,
    after_id: str | None,
    since: datetime | None,
    skip: set[str],
    types: list[str] | None,
    wait_seconds: float,
    still_allowed: Callable[[], None],
    every: float = 0.5,
) -> list[WebhookEvent]:
    """`webhook_events_after`, asked every `every` seconds until there are some or `wait_seconds` have passed
    (a listener's long poll); `still_allowed()` between asks raises to end the wait (a revoked key). Without
    `after_id` nor `since`, from now. An `after_id` that is not the organization's event is NotFound."""
    after = None
    if after_id is not None:
        after = WebhookEvent.objects.filter(organization=organization, pk=after_id).first()
        if after is None:
            raise NotFound(f"No webhook_event with id '{after_id[:64]}' (kept 30 days).", field="after")
    if after is None and since is None:
        since = timezone.now()
    deadline = time.monotonic() + wait_seconds
    while True:
        events = webhook_events_after(
            organization=organization, after=after, since=since, skip=skip, types=types, limit=100
        )
        if events or time.monotonic() >= deadline:
            return events
        time.sleep(every)
        still_allowed()
