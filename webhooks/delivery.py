"""Sending deliveries: claim, POST the stored body, record the attempt, schedule or finish.

The database is the truth. A delivery is claimed by pushing `next_attempt_at`
past the attempt's lease with a conditional update, so two workers never send
it at once; a worker that dies mid-attempt leaves the claim to lapse, and the
periodic sweep hands the delivery to another worker. The body is never
rebuilt: every attempt sends and signs the same stored bytes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta

import requests
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from webhooks.crypto import decrypt_secret, sign
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.urlguard import GuardedAdapter, UnsafeWebhookUrl, validate_webhook_url

logger = logging.getLogger(__name__)
Status = WebhookDelivery.Status


@dataclass(frozen=True)
class AttemptResult:
    delivery_id: str
    response_code: int | None
    succeeded: bool
    attempts: int


def _session() -> requests.Session:
    session = requests.Session()
    adapter = GuardedAdapter(max_retries=0)  # retries are ours, on the database schedule
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def _headers(
    delivery: WebhookDelivery, endpoint: WebhookEndpoint, body: bytes, timestamp: str
) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "checkout-service-webhooks/1",
        "X-Service-Signature": sign(body, decrypt_secret(endpoint.secret_encrypted)),
        "X-Service-Webhook-Id": endpoint.id,
        "X-Service-Delivery-Id": delivery.id,
        "X-Service-Event": delivery.event_type,
        "X-Service-Timestamp": timestamp,
    }
    if delivery.is_test:
        headers["X-Service-Test"] = "true"
    return headers


def _post(delivery: WebhookDelivery, endpoint: WebhookEndpoint) -> tuple[int | None, int, str]:
    """(status code or None, elapsed ms, error text). Never raises for network trouble."""
    body = delivery.body.encode()
    timestamp = delivery.created_at.isoformat().replace("+00:00", "Z")
    started = time.monotonic()
    try:
        validate_webhook_url(endpoint.url, resolve=False)
        response = _session().post(
            endpoint.url,
            data=body,
            headers=_headers(delivery, endpoint, body, timestamp),
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            allow_redirects=False,
            stream=True,  # the receiver's body is not needed; do not read an unbounded one
        )
        response.close()
        return response.status_code, int((time.monotonic() - started) * 1000), ""
    except UnsafeWebhookUrl as exc:
        return None, int((time.monotonic() - started) * 1000), str(exc)[:500]
    except requests.Timeout:
        return (
            None,
            int((time.monotonic() - started) * 1000),
            f"timed out after {settings.WEBHOOK_TIMEOUT_SECONDS:g} s",
        )
    except requests.RequestException as exc:
        return (
            None,
            int((time.monotonic() - started) * 1000),
            f"{exc.__class__.__name__}: connection failed"[:500],
        )


def _claim(delivery_id: str, *, manual: bool) -> bool:
    now = timezone.now()
    lease = now + timedelta(seconds=settings.WEBHOOK_DELIVERY_LEASE_SECONDS)
    deliveries = WebhookDelivery.objects.filter(pk=delivery_id)
    if manual:
        claimed = deliveries.filter(status=Status.FAILED).update(status=Status.PENDING, next_attempt_at=lease)
    else:
        claimed = deliveries.filter(status=Status.PENDING, next_attempt_at__lte=now).update(
            next_attempt_at=lease
        )
    return claimed == 1


def attempt_delivery(delivery_id: str, *, manual: bool = False) -> AttemptResult | None:
    """Make one attempt if the delivery is due (or, `manual`, failed); None if there was nothing to do."""
    if not _claim(delivery_id, manual=manual):
        return None
    delivery = (
        WebhookDelivery.objects.select_related("endpoint", "endpoint__organization")
        .filter(pk=delivery_id)
        .first()
    )
    if delivery is None:  # the endpoint was deleted, which cancels its deliveries
        return None
    endpoint = delivery.endpoint
    if not endpoint.is_active and not delivery.is_test and not manual:
        # Paused: keep the delivery, send nothing; resuming the endpoint reschedules it.
        WebhookDelivery.objects.filter(pk=delivery_id, status=Status.PENDING).update(next_attempt_at=None)
        return None
    code, elapsed_ms, error = _post(delivery, endpoint)
    succeeded = code is not None and 200 <= code < 300
    if code is not None and not succeeded:
        error = f"HTTP {code}"
    return _record(
        delivery, endpoint, code=code, elapsed_ms=elapsed_ms, error=error, succeeded=succeeded, manual=manual
    )


@transaction.atomic
def _record(delivery, endpoint, *, code, elapsed_ms, error, succeeded, manual) -> AttemptResult | None:
    # Lock the row: an endpoint deleted while the POST was in flight takes its deliveries with it.
    if not WebhookDelivery.objects.select_for_update().filter(pk=delivery.pk).exists():
        return None
    now = timezone.now()
    number = delivery.attempts + 1
    WebhookAttempt.objects.create(
        delivery=delivery,
        number=number,
        response_code=code,
        response_time_ms=elapsed_ms,
        error=error,
        manual=manual,
    )
    retries = settings.WEBHOOK_RETRY_DELAYS
    if succeeded:
        status, next_attempt_at = Status.SUCCESS, None
    elif manual or delivery.is_test or number > len(retries):
        status, next_attempt_at = Status.FAILED, None
    else:
        status, next_attempt_at = Status.PENDING, now + timedelta(seconds=retries[number - 1])
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=status,
        attempts=number,
        next_attempt_at=next_attempt_at,
        response_code=code,
        response_time_ms=elapsed_ms,
        last_error=error,
        completed_at=now if status != Status.PENDING else None,
    )
    _count(endpoint, delivery, status=status, manual=manual, now=now)
    if next_attempt_at is not None and retries[number - 1] <= 60:
        # Short delays are also queued with a countdown; the sweep remains the guarantee.
        from webhooks.tasks import deliver_webhook

        countdown = retries[number - 1]
        transaction.on_commit(lambda: deliver_webhook.apply_async((delivery.pk,), countdown=countdown))
    return AttemptResult(delivery_id=delivery.pk, response_code=code, succeeded=succeeded, attempts=number)


def _count(endpoint: WebhookEndpoint, delivery: WebhookDelivery, *, status: str, manual: bool, now) -> None:
    """Endpoint counters, with F() so concurrent workers never lose an increment."""
    endpoints = WebhookEndpoint.objects.filter(pk=endpoint.pk)
    if delivery.is_test:
        endpoints.update(last_triggered_at=now)
        return
    if status == Status.SUCCESS:
        endpoints.update(success_count=F("success_count") + 1, consecutive_failures=0, last_triggered_at=now)
    elif status == Status.FAILED and not manual:
        endpoints.update(
            failure_count=F("failure_count") + 1,
            consecutive_failures=F("consecutive_failures") + 1,
            last_triggered_at=now,
        )
        _maybe_disable(endpoint.pk)
    else:
        endpoints.update(last_triggered_at=now)


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
        endpoint = WebhookEndpoint.objects.select_related("organization").get(pk=endpoint_id)
        transaction.on_commit(lambda: _notify_disabled(endpoint))


def _notify_disabled(endpoint: WebhookEndpoint) -> None:
    recipient = endpoint.organization.contact_email
    if not recipient:
        logger.warning(
            "Webhook endpoint %s disabled; organization %s has no contact email",
            endpoint.id,
            endpoint.organization_id,
        )
        return
    send_mail(
        subject=f"Webhook endpoint {endpoint.id} was disabled",
        message=(
            f"Deliveries to {endpoint.url} failed {settings.WEBHOOK_AUTO_DISABLE_AFTER} times in a row, so the "
            f"endpoint {endpoint.id} has been disabled and receives nothing until it is re-enabled "
            f"(PATCH /api/v1/webhooks/{endpoint.id} with is_active true). Failed deliveries can be retried "
            "from the delivery history."
        ),
        from_email=None,
        recipient_list=[recipient],
    )


def due_delivery_ids(*, limit: int = 500) -> list[str]:
    return list(
        # Test pings are sent by the request that created them, never by the sweep.
        WebhookDelivery.objects.filter(
            status=Status.PENDING, is_test=False, next_attempt_at__lte=timezone.now()
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
