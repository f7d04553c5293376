"""An endpoint's health, as its deliveries end: success and failure counts (with F(), so concurrent workers
never lose an increment), and, after WEBHOOK_AUTO_DISABLE_AFTER failures in a row, the endpoint disabled and
its organization told through the notification outbox, in the same transaction."""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from webhooks import notifications
from webhooks.kinds import EmailKind
from webhooks.models import WebhookDelivery, WebhookEndpoint

logger = logging.getLogger("webhooks.delivery")  # what it does is the delivery's news
Status = WebhookDelivery.Status


def endpoints_lock(endpoint_ids: list[str]) -> None:
    """Lock several endpoint rows in key order, so that transactions counting for overlapping sets of
    endpoints (an event's deliveries) never wait for each other in a cycle."""
    list(
        WebhookEndpoint.objects.select_for_update(no_key=True)
        .filter(pk__in=endpoint_ids)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def endpoints_successes_count(successes: dict[str, int], now: datetime) -> None:
    """Count successful attempts, `{endpoint id: how many}`: one UPDATE per distinct count."""
    by_count: dict[int, list[str]] = {}
    for endpoint_id, count in successes.items():
        by_count.setdefault(count, []).append(endpoint_id)
    for count, endpoint_ids in sorted(by_count.items()):
        WebhookEndpoint.objects.filter(pk__in=endpoint_ids).update(
            success_count=F("success_count") + count,
            consecutive_failures=0,
            last_attempt_failed=False,
            last_triggered_at=now,
        )


def endpoint_attempt_count(
    endpoint: WebhookEndpoint, delivery: WebhookDelivery, *, status: str, manual: bool, failed: bool, now
) -> None:
    """Endpoint counters, with F() so concurrent workers never lose an increment."""
    endpoints = WebhookEndpoint.objects.filter(pk=endpoint.pk)
    if delivery.is_test:
        endpoints.update(last_triggered_at=now)
        return
    if status == Status.SUCCESS:
        endpoints.update(
            success_count=F("success_count") + 1,
            consecutive_failures=0,
            last_attempt_failed=False,
            last_triggered_at=now,
        )
    elif status == Status.FAILED and not manual:
        endpoints.update(
            failure_count=F("failure_count") + 1,
            consecutive_failures=F("consecutive_failures") + 1,
            last_attempt_failed=True,
            last_triggered_at=now,
        )
        _maybe_disable(endpoint.pk)
    else:
        endpoints.update(last_attempt_failed=failed, last_triggered_at=now)


def _maybe_disable(endpoint_id: str) -> None:
    threshold = settings.WEBHOOK_AUTO_DISABLE_AFTER
    disabled = WebhookEndpoint.objects.filter(
        pk=endpoint_id, is_active=True, consecutive_failures__gte=threshold
    ).update(
        is_active=False,
        disabled_reason=f"{threshold} consecutive failed deliveries",
        updated_at=timezone.now(),
    )
    if disabled:
        _notify_disabled(WebhookEndpoint.objects.select_related("organization").get(pk=endpoint_id))


def _notify_disabled(endpoint: WebhookEndpoint) -> None:
    """Tell the organization's contact address, through the notification outbox (sent by a worker, retried
    like every notification email), in the transaction that disabled the endpoint."""
    recipient = endpoint.organization.contact_email
    if not recipient:
        logger.warning(
            "Webhook endpoint %s disabled; organization %s has no contact email",
            endpoint.id,
            endpoint.organization_id,
        )
        return
    notifications.queue(
        organization=endpoint.organization,
        event=None,
        event_type=EmailKind.WEBHOOK_DISABLED,
        to=recipient,
        subject=f"Webhook endpoint {endpoint.id} was disabled",
        body=(
            f"Deliveries to {endpoint.url} failed {settings.WEBHOOK_AUTO_DISABLE_AFTER} times in a row, so the "
            f"endpoint {endpoint.id} has been disabled and receives nothing until it is re-enabled "
            f"(PATCH /api/v1/webhooks/{endpoint.id} with is_active true). Failed deliveries can be retried "
            "from the delivery history."
        ),
    )
