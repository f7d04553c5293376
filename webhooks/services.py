"""Every write to webhook endpoints: create, update, delete, test and manual retry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import NOTHING_TO_UPDATE, Conflict, ErrorCode, InvalidRequest, NotFound
from core.tasks import Later
from platform_api import ratelimit
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.errors import PlatformError
from platform_api.models import Organization
from platform_api.signals import record_write
from webhooks.crypto import decrypt_secret, encrypt_secret, new_endpoint_secret
from webhooks.delivery import AttemptResult, attempt_delivery
from webhooks.events import EVENT_TYPES, delivery_body
from webhooks.kinds import TEST_EVENT
from webhooks.models import (
    NotificationEmail,
    NotificationSettings,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from webhooks.states import DELIVERY

DELIVER_WEBHOOK = Later("webhooks.tasks.deliver_webhook")

# What a payer told about themselves, wherever an event's data carries it (the transaction, the session block,
# `checkout.completed`'s extras, `checkout.expired`'s session): erasure replaces each with this.
PERSONAL_FIELDS: dict[str, Any] = {
    "form_data": {},
    "shipping_address": None,
    "customer_email": None,
    "customer_name": None,
    "customerEmail": None,
    "customerName": None,
}
ERASED_EMAIL_BODY = (
    "This notification named a customer whose personal data was erased at the merchant's request."
)


def _audit(ctx: RequestContext, endpoint_id: str, name: AuditName, *, created: bool = False) -> None:
    record_write(
        ctx=ctx,
        event_type=name,
        resource_type="webhook",
        resource_id=endpoint_id,
        created=created,
    )


@transaction.atomic
def webhook_endpoint_create(
    *, ctx: RequestContext, url: str, events: list[str], description: str = ""
) -> tuple[WebhookEndpoint, str]:
    """Create an endpoint; returns it with its secret, which is shown only this once."""
    organization = ctx.organization
    if organization is None:
        raise ValueError("webhook endpoints belong to an organization")
    if (
        WebhookEndpoint.objects.filter(organization=organization).count()
        >= settings.WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZATION
    ):
        raise InvalidRequest(
            f"An organization can have at most {settings.WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZATION} webhook endpoints."
        )
    secret = new_endpoint_secret()
    endpoint = WebhookEndpoint.objects.create(
        organization=organization,
        url=url,
        events=events,
        description=description,
        secret_encrypted=encrypt_secret(secret),
    )
    _audit(ctx, endpoint.id, AuditName.WEBHOOK_CREATED, created=True)
    return endpoint, secret


@transaction.atomic
def webhook_endpoint_update(
    *,
    ctx: RequestContext,
    endpoint: WebhookEndpoint,
    url: str | None = None,
    events: list[str] | None = None,
    is_active: bool | None = None,
    pause_reason: str = "",
) -> WebhookEndpoint:
    """Change an endpoint; resuming one clears its failure streak and makes its held deliveries due."""
    changes = {
        k: v for k, v in {"url": url, "events": events, "is_active": is_active}.items() if v is not None
    }
    if not changes:
        raise InvalidRequest(NOTHING_TO_UPDATE, code=ErrorCode.NOTHING_TO_UPDATE)
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    resumed = is_active is True and not endpoint.is_active
    paused = is_active is False and endpoint.is_active
    for field, value in changes.items():
        setattr(endpoint, field, value)
    if resumed:
        endpoint.consecutive_failures = 0
        endpoint.disabled_reason = ""
    elif paused:
        endpoint.disabled_reason = pause_reason[:200]
    endpoint.updated_at = timezone.now()
    endpoint.save(update_fields=[*changes, "consecutive_failures", "disabled_reason", "updated_at"])
    if resumed:
        _reschedule_paused(endpoint)
    _audit(ctx, endpoint.id, AuditName.WEBHOOK_UPDATED)
    return endpoint


def _reschedule_paused(endpoint: WebhookEndpoint) -> None:
    """Deliveries held while the endpoint was paused become due again."""
    held = list(
        WebhookDelivery.objects.filter(
            endpoint=endpoint, status="pending", next_attempt_at__isnull=True
        ).values_list("pk", flat=True)
    )
    WebhookDelivery.objects.filter(pk__in=held).update(next_attempt_at=timezone.now())
    transaction.on_commit(lambda: [DELIVER_WEBHOOK.delay(delivery_id) for delivery_id in held])


@transaction.atomic
def webhook_endpoint_delete(*, ctx: RequestContext, endpoint: WebhookEndpoint) -> None:
    """Delete the endpoint; its pending deliveries go with it (a worker finding one gone does nothing)."""
    endpoint_id = endpoint.id
    # Its deliveries first, then the endpoint: the order in which delivery workers lock them.
    WebhookDelivery.objects.filter(endpoint=endpoint).delete()
    endpoint.delete()
    _audit(ctx, endpoint_id, AuditName.WEBHOOK_DELETED)


@transaction.atomic
def webhook_endpoint_rotate_secret(
    *, ctx: RequestContext, endpoint: WebhookEndpoint
) -> tuple[WebhookEndpoint, str]:
    """A new secret, returned this once; the old one keeps signing beside it for the overlap period.

    Rotating again within the overlap replaces the older secret: only the two
    newest ever sign.
    """
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    secret = new_endpoint_secret()
    now = timezone.now()
    endpoint.previous_secret_encrypted = encrypt_secret(decrypt_secret(endpoint.secret_encrypted))
    endpoint.previous_secret_expires_at = now + timedelta(
        seconds=settings.WEBHOOK_SECRET_ROTATION_OVERLAP_SECONDS
    )
    endpoint.secret_encrypted = encrypt_secret(secret)
    endpoint.updated_at = now
    endpoint.save(
        update_fields=[
            "previous_secret_encrypted",
            "previous_secret_expires_at",
            "secret_encrypted",
            "updated_at",
        ]
    )
    _audit(ctx, endpoint.id, AuditName.WEBHOOK_SECRET_ROTATED)
    return endpoint, secret


def webhook_endpoint_send_test(*, endpoint: WebhookEndpoint) -> AttemptResult:
    """Send a `test.ping` now, synchronously, and keep it in the delivery history."""
    now = timezone.now()
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_type=TEST_EVENT,
        is_test=True,
        next_attempt_at=now,
        created_at=now,
        body=delivery_body(
            event_type=TEST_EVENT,
            endpoint_id=endpoint.id,
            timestamp=now.isoformat().replace("+00:00", "Z"),
            data={"message": "A test delivery from the checkout service.", "test": True},
            livemode=endpoint.organization.livemode,
        ),
    )
    result = attempt_delivery(delivery.id, synchronous=True)
    if result is None:  # only if the endpoint vanished mid-test
        raise NotFound(f"No webhook with id '{endpoint.id}'.")
    return result


def webhook_delivery_retry(*, delivery: WebhookDelivery) -> AttemptResult:
    """Retry a failed delivery once, now; the same body, signature and delivery id as before."""
    if delivery.status != WebhookDelivery.Status.FAILED:
        raise Conflict(f"Only a failed delivery can be retried; delivery {delivery.id} is {delivery.status}.")
    result = attempt_delivery(delivery.id, manual=True)
    if result is None:
        raise Conflict(f"Delivery {delivery.id} is already being retried.")
    return result


RESEND_WINDOW_SECONDS = 3600


def _resend_allowed(event: WebhookEvent, endpoint: WebhookEndpoint) -> None:
    """429 when `event` was resent to `endpoint` WEBHOOK_RESENDS_PER_EVENT times in the last hour, or anything
    was resent to it WEBHOOK_RESENDS_PER_ENDPOINT times: a resend is a POST to the merchant's URL, and each
    one that fails is retried, so unbounded resends made a flood of requests to one server."""
    for bucket, limit, what in (
        (f"resend:{event.pk}:{endpoint.pk}", settings.WEBHOOK_RESENDS_PER_EVENT, f"of event {event.pk}"),
        (f"resend:{endpoint.pk}", settings.WEBHOOK_RESENDS_PER_ENDPOINT, "to one endpoint"),
    ):
        counted = ratelimit.hit(bucket, limit, window=RESEND_WINDOW_SECONDS)
        if not counted.allowed:
            raise PlatformError(
                status=429,
                type="rate_limit_error",
                code="rate_limit_exceeded",
                message=f"At most {limit} resends {what} an hour (to {endpoint.pk}). Retry after "
                f"{counted.retry_after} seconds.",
                headers={"Retry-After": str(counted.retry_after)},
            )


@transaction.atomic
def webhook_event_resend(
    *, ctx: RequestContext, event: WebhookEvent, endpoint_id: str | None = None
) -> list[WebhookDelivery]:
    """A new delivery of `event` to `endpoint_id`, or to every endpoint it was delivered to that is still
    active: the body each was sent (or, to an endpoint it never went to, the body it would have had), signed
    afresh when sent, under the event's id (`webhook-id`), so that a receiver that has it already knows it.
    Queued to the webhook workers once this commits; a disabled endpoint is refused."""
    organization = ctx.organization
    sent = {delivery.endpoint_id: delivery for delivery in event.deliveries.order_by("created_at", "pk")}
    if endpoint_id is not None:
        endpoint = WebhookEndpoint.objects.filter(organization=organization, pk=endpoint_id).first()
        if endpoint is None:
            raise NotFound(f"No webhook with id '{endpoint_id}'.", field="endpoint")
        if not endpoint.is_active:
            raise InvalidRequest(
                f"Webhook {endpoint_id} is disabled: enable it to resend to it.", field="endpoint"
            )
        endpoints = [endpoint]
    else:
        endpoints = list(
            WebhookEndpoint.objects.filter(
                organization=organization, pk__in=list(sent), is_active=True
            ).order_by("pk")
        )
        if not endpoints:
            raise InvalidRequest(
                f"Event {event.id} went to no endpoint that is still active: name one with 'endpoint'.",
                field="endpoint",
            )
    for endpoint in endpoints:
        _resend_allowed(event, endpoint)
    now = timezone.now()
    timestamp = event.created_at.isoformat().replace("+00:00", "Z")
    deliveries = [
        WebhookDelivery(
            endpoint=endpoint,
            event=event,
            event_type=event.event_type,
            body=sent[endpoint.pk].body
            if endpoint.pk in sent
            else delivery_body(
                event_type=event.event_type,
                endpoint_id=endpoint.pk,
                timestamp=timestamp,
                data=event.data,
                livemode=event.livemode,
            ),
            next_attempt_at=now,
            created_at=now,
        )
        for endpoint in endpoints
    ]
    WebhookDelivery.objects.bulk_create(deliveries)
    record_write(
        ctx=ctx,
        event_type=AuditName.WEBHOOK_EVENT_RESENT,
        resource_type="webhook_event",
        resource_id=event.id,
    )
    ids = [delivery.pk for delivery in deliveries]
    transaction.on_commit(lambda: [DELIVER_WEBHOOK.delay(delivery_id) for delivery_id in ids])
    return deliveries


def webhook_events_purge(*, now=None, batch_size: int = 500) -> int:
    """Delete the events older than WEBHOOK_EVENT_RETENTION_DAYS with their deliveries, their attempts and their
    emails, in short batches; how many events went. A delivery still being retried keeps its event."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.WEBHOOK_EVENT_RETENTION_DAYS)
    total = 0
    while True:
        with transaction.atomic():
            ids = list(
                WebhookEvent.objects.filter(created_at__lt=cutoff)
                .exclude(deliveries__status=WebhookDelivery.Status.PENDING)
                .values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                return total
            WebhookDelivery.objects.filter(event_id__in=ids).delete()
            NotificationEmail.objects.filter(event_id__in=ids).delete()
            WebhookEvent.objects.filter(pk__in=ids).delete()
        total += len(ids)


def webhook_deliveries_requeue_failed(*, deliveries) -> int:
    """Make failed deliveries pending and due again (operations, after a merchant's outage)."""
    with transaction.atomic():
        ids = list(deliveries.filter(status=WebhookDelivery.Status.FAILED).values_list("pk", flat=True))
        DELIVERY.move(
            WebhookDelivery.objects.filter(pk__in=ids),
            from_=(WebhookDelivery.Status.FAILED,),
            to=WebhookDelivery.Status.PENDING,
            next_attempt_at=timezone.now(),
            completed_at=None,
        )
        transaction.on_commit(lambda: [DELIVER_WEBHOOK.delay(delivery_id) for delivery_id in ids])
    return len(ids)


def _without_personal_data(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: PERSONAL_FIELDS[k] if k in PERSONAL_FIELDS else _without_personal_data(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_personal_data(item) for item in value]
    return value


@transaction.atomic
def webhook_events_erase_personal_data(*, organization, session_ids: list[str]) -> int:
    """Erase a payer's personal data from the events about these checkout sessions, from the stored bodies of
    their deliveries (a retry sends the body without it, signed anew) and from the notification emails they
    made; how many events were changed. Amounts, hashes, wallets and ids stay."""
    events = list(WebhookEvent.objects.filter(organization=organization, subject__in=session_ids))
    for event in events:
        event.data = _without_personal_data(event.data)
        event.save(update_fields=["data"])
        timestamp = event.created_at.isoformat().replace("+00:00", "Z")
        for delivery in WebhookDelivery.objects.filter(event=event):
            delivery.body = delivery_body(
                event_type=event.event_type,
                endpoint_id=delivery.endpoint_id,
                timestamp=timestamp,
                data=event.data,
                livemode=event.livemode,
            )
            delivery.save(update_fields=["body"])
    NotificationEmail.objects.filter(event__in=events).update(body=ERASED_EMAIL_BODY)
    for email in NotificationEmail.objects.filter(event__in=events).exclude(last_error=""):
        # What failed stays (its class); its words go, whatever an older release kept in them.
        failure = email.last_error.split(":", 1)[0]
        NotificationEmail.objects.filter(pk=email.pk).update(last_error=f"{failure}: (erased)")
    # A payer's own receipt went to the payer's address: that goes too.
    NotificationEmail.objects.filter(event__in=events, event_type__startswith="receipt.").update(
        to_address=""
    )
    return len(events)


# --- notification settings (what the organization is emailed about) -----------------------


def notification_settings_get(organization: Organization) -> NotificationSettings:
    """The organization's settings; created (all off) the first time they are asked for."""
    settings_row, _ = NotificationSettings.objects.get_or_create(organization=organization)
    return settings_row


@transaction.atomic
def notification_settings_update(*, ctx: RequestContext, organization: Organization, data: dict[str, Any]):
    if not data:
        raise InvalidRequest(NOTHING_TO_UPDATE, code=ErrorCode.NOTHING_TO_UPDATE)
    row = NotificationSettings.objects.select_for_update().get(pk=notification_settings_get(organization).pk)
    if "email_address" in data:
        row.email_address = data["email_address"] or ""
    if "enabled_events" in data:
        row.enabled_events = sorted(set(data["enabled_events"]), key=EVENT_TYPES.index)
    if "email_enabled" in data:
        row.email_enabled = data["email_enabled"]
    if row.email_enabled and not row.email_address:
        raise InvalidRequest("'email_address' is needed to enable email.", field="email_address")
    row.updated_at = timezone.now()
    row.save()
    record_write(
        ctx=ctx,
        event_type=AuditName.NOTIFICATION_UPDATED,
        resource_type="notification",
        resource_id=row.id,
    )
    return row
