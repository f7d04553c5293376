"""Claiming deliveries: who sends what, and when an endpoint has room.

A claim is one short transaction that locks the delivery, then its endpoint
row (always in that order), checks the endpoint's in-flight cap, records the
attempt as started (so a worker killed mid-attempt leaves `attempts` true) and
pushes `next_attempt_at` to the end of the attempt's lease, which is longer
than the attempt's total deadline: a live attempt is never handed to a second
worker. A thread that finished an attempt either takes its endpoint's next
due deliveries itself (`start_attempts`) or hands its slot on through the
broker (`next_waiting`). Sending and recording are `webhooks.delivery`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from webhooks.health import endpoint_attempt_count
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.states import DELIVERY

logger = logging.getLogger("webhooks.delivery")  # claims are the delivery's news
Status = WebhookDelivery.Status

CUT_OFF = "cut off: the worker stopped before the attempt finished"


@dataclass(frozen=True)
class Claim:
    delivery: WebhookDelivery
    endpoint: WebhookEndpoint
    number: int
    started_at: datetime
    manual: bool


def _max_attempts() -> int:
    return 1 + len(settings.WEBHOOK_RETRY_DELAYS)


def not_due(delivery_id: str, now: datetime) -> bool:
    """True when a worker's delivery is not due (already sent, claimed, or gone): no lock, no write.

    Most tasks that find nothing to do are duplicates of a delivery already
    sent by a thread that kept its endpoint's slot (`deliver_and_continue`) or
    by its event's task. The locked claim re-checks everything, and marks a
    due delivery of a busy endpoint as waiting for a slot, so that the attempt
    that frees one hands it on (`next_waiting`).
    """
    row = (
        WebhookDelivery.objects.filter(pk=delivery_id)
        .values("status", "next_attempt_at", "is_test", "attempt_started_at")
        .first()
    )
    if row is None or row["status"] != Status.PENDING or row["is_test"]:
        return True
    return row["next_attempt_at"] is None or row["next_attempt_at"] > now


@transaction.atomic
def delivery_claim(delivery_id: str, *, manual: bool, synchronous: bool) -> Claim | None:
    delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
    if delivery is None:  # the endpoint was deleted, which cancels its deliveries
        return None
    # The endpoint row is the lock that makes the in-flight count exact across workers. Every
    # transaction here locks deliveries before their endpoint (never the other way round), and
    # FOR NO KEY UPDATE leaves new deliveries' foreign-key checks free to proceed.
    endpoint = WebhookEndpoint.objects.select_for_update(no_key=True).filter(pk=delivery.endpoint_id).first()
    if endpoint is None:
        return None
    now = timezone.now()
    if manual:
        if delivery.status != Status.FAILED:
            return None
    elif (
        delivery.status != Status.PENDING
        or delivery.next_attempt_at is None
        or delivery.next_attempt_at > now
        or (delivery.is_test and not synchronous)  # test pings belong to the request that sends them
    ):
        return None
    if delivery.attempt_started_at is not None:  # an earlier attempt's lease lapsed: its worker died
        WebhookAttempt.objects.filter(
            delivery=delivery, number=delivery.attempts, finished_at__isnull=True
        ).update(error=CUT_OFF)
    deliveries = WebhookDelivery.objects.filter(pk=delivery.pk)
    if not manual and not delivery.is_test:
        if not endpoint.is_active:
            # Paused: keep the delivery, send nothing; resuming the endpoint reschedules it.
            deliveries.update(next_attempt_at=None, attempt_started_at=None)
            return None
        if delivery.attempts >= _max_attempts():  # the last attempt was cut off
            DELIVERY.move(
                deliveries,
                from_=(Status.PENDING,),
                to=Status.FAILED,
                next_attempt_at=None,
                attempt_started_at=None,
                last_error=CUT_OFF,
                completed_at=now,
            )
            endpoint_attempt_count(
                endpoint, delivery, status=Status.FAILED, manual=False, failed=True, now=now
            )
            return None
        if _in_flight([endpoint.pk], now).exclude(pk=delivery.pk).count() >= _slots(endpoint):
            # Busy: wait for a slot. The attempt that frees one hands this endpoint its next delivery.
            _wait_for_slot(deliveries, now)
            return None
    return _start_attempt(delivery, endpoint, now, manual=manual)


def _slots(endpoint: WebhookEndpoint) -> int:
    """How many attempts the endpoint may have in flight: one while its last attempt failed."""
    return 1 if endpoint.last_attempt_failed else settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT


def _in_flight(endpoint_ids, now: datetime):
    return WebhookDelivery.objects.filter(
        endpoint_id__in=endpoint_ids, attempt_started_at__isnull=False, next_attempt_at__gt=now
    )


def _wait_for_slot(deliveries, now: datetime) -> None:
    """Mark as waiting for a slot (no message of their own is coming); the sweep's fallback after a while."""
    deliveries.update(
        next_attempt_at=now + timedelta(seconds=settings.WEBHOOK_BUSY_RETRY_SECONDS), waiting_for_slot=True
    )


def _start_attempt(
    delivery: WebhookDelivery, endpoint: WebhookEndpoint, now: datetime, *, manual: bool
) -> Claim:
    """Record the attempt as started and lease the delivery; the caller holds both rows' locks."""
    number = delivery.attempts + 1
    lease = now + timedelta(seconds=settings.WEBHOOK_DELIVERY_LEASE_SECONDS)
    DELIVERY.move(  # a manual resend starts from any status
        WebhookDelivery.objects.filter(pk=delivery.pk),
        from_=DELIVERY.statuses,
        to=Status.PENDING,
        attempts=number,
        attempt_started_at=now,
        next_attempt_at=lease,
        completed_at=None,
        waiting_for_slot=False,
    )
    WebhookAttempt.objects.create(delivery=delivery, number=number, manual=manual, created_at=now)
    return Claim(delivery=delivery, endpoint=endpoint, number=number, started_at=now, manual=manual)


def _first_attempts_due(event_id: str, now: datetime):
    return WebhookDelivery.objects.filter(
        event_id=event_id,
        status=Status.PENDING,
        is_test=False,
        attempts=0,
        attempt_started_at__isnull=True,
        next_attempt_at__lte=now,
    )


def event_claims(event_id: str) -> list[Claim]:
    """`_event_claims`, after a check without a lock or a transaction: in a burst, a draining thread has
    often sent an event's deliveries before its own message is taken."""
    if not _first_attempts_due(event_id, timezone.now()).exists():
        return []
    return _event_claims(event_id)


@transaction.atomic
def _event_claims(event_id: str) -> list[Claim]:
    """The first attempts of an event's deliveries, every endpoint's at once, in one transaction.

    The event's new deliveries are locked first, then their endpoints in key
    order (as every claim does: deliveries, then endpoints), and each endpoint's
    in-flight count is read once. A delivery whose endpoint is paused is kept
    unscheduled; one whose endpoint has no free slot waits for one, exactly as a
    single claim (`delivery_claim`) would leave them. Deliveries already taken
    (by a draining thread, or by this task before a redelivery) are skipped.
    """
    now = timezone.now()
    deliveries = list(_first_attempts_due(event_id, now).select_for_update(skip_locked=True).order_by("pk"))
    if not deliveries:
        return []
    endpoint_ids = {delivery.endpoint_id for delivery in deliveries}
    endpoints = {
        endpoint.pk: endpoint
        for endpoint in WebhookEndpoint.objects.select_for_update(no_key=True)
        .filter(pk__in=endpoint_ids)
        .order_by("pk")
    }
    in_flight = dict(
        _in_flight(endpoint_ids, now)
        .values("endpoint_id")
        .annotate(n=Count("pk"))
        .values_list("endpoint_id", "n")
    )
    paused, busy, claimed = [], [], []
    for delivery in deliveries:
        endpoint = endpoints.get(delivery.endpoint_id)
        if endpoint is None:  # deleted: its deliveries went with it
            continue
        if not endpoint.is_active:
            paused.append(delivery.pk)
            continue
        if in_flight.get(endpoint.pk, 0) >= _slots(endpoint):
            busy.append(delivery.pk)
            continue
        in_flight[endpoint.pk] = in_flight.get(endpoint.pk, 0) + 1
        claimed.append(delivery)
    if paused:
        WebhookDelivery.objects.filter(pk__in=paused).update(next_attempt_at=None)
    if busy:
        _wait_for_slot(WebhookDelivery.objects.filter(pk__in=busy), now)
    # Their task drains on after these first attempts: the drain's lease, as for any batch it claims.
    return start_attempts([(d, endpoints[d.endpoint_id]) for d in claimed], now)


def release(claims: list[Claim], now: datetime) -> None:
    """Claimed but not sent (the drain stopped): no attempt was made, and the delivery is due at once, waiting
    for the slot that its endpoint's next finished attempt frees (no message of its own is coming)."""
    started = Q()
    for claim in claims:
        started |= Q(delivery_id=claim.delivery.pk, number=claim.number)
    WebhookAttempt.objects.filter(started).delete()
    WebhookDelivery.objects.filter(pk__in=[c.delivery.pk for c in claims]).update(
        attempts=F("attempts") - 1, attempt_started_at=None, next_attempt_at=now, waiting_for_slot=True
    )


def start_attempts(deliveries: list[tuple[WebhookDelivery, WebhookEndpoint]], now: datetime) -> list[Claim]:
    """Claim a batch for a draining thread (each delivery with its endpoint): one lease covering the drain's
    time left, attempts started."""
    if not deliveries:
        return []
    lease = now + timedelta(seconds=settings.WEBHOOK_DRAIN_SECONDS + settings.WEBHOOK_DELIVERY_LEASE_SECONDS)
    DELIVERY.move(
        WebhookDelivery.objects.filter(pk__in=[d.pk for d, _ in deliveries]),
        from_=DELIVERY.statuses,
        to=Status.PENDING,
        attempts=F("attempts") + 1,
        attempt_started_at=now,
        next_attempt_at=lease,
        completed_at=None,
        waiting_for_slot=False,
    )
    WebhookAttempt.objects.bulk_create(
        [
            WebhookAttempt(delivery=d, number=d.attempts + 1, manual=False, created_at=now)
            for d, _ in deliveries
        ]
    )
    return [
        Claim(delivery=d, endpoint=endpoint, number=d.attempts + 1, started_at=now, manual=False)
        for d, endpoint in deliveries
    ]


def next_for_slot(endpoint: WebhookEndpoint, now: datetime) -> list[WebhookDelivery]:
    """The endpoint's oldest deliveries waiting for a slot or due now, locked; ones a claim holds are skipped."""
    return list(
        WebhookDelivery.objects.select_for_update(skip_locked=True)
        .filter(endpoint=endpoint, status=Status.PENDING, is_test=False, attempt_started_at__isnull=True)
        .filter(Q(waiting_for_slot=True) | Q(next_attempt_at__lte=now))
        .order_by("created_at", "pk")[: settings.WEBHOOK_DRAIN_BATCH]
    )


def next_waiting(endpoint_ids: list[str], now: datetime) -> list[str]:
    """Each endpoint's oldest delivery waiting for a slot: the slot just freed is its turn.

    Waiting deliveries found their endpoint busy (or were claimed by a drain
    that stopped) and have no message of their own coming; the one chosen is
    made due at once, so that a busy endpoint's queue drains as fast as its
    slots free, not at the postponement's pace. Deliveries merely due have
    their message coming (their event's, a retry's, the sweep's) and are left
    to it; retries waiting for their delay are not waiting for a slot.

    The caller holds the endpoints' rows, so a claim that is counting their
    slots either finished (its waiting delivery is seen here) or counts after
    this transaction (and finds the freed slot); a delivery such a claim
    holds is skipped, never waited for.
    """
    waiting = []
    for endpoint_id in endpoint_ids:
        waiting += list(
            _waiting()
            .filter(endpoint_id=endpoint_id)
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:1]
        )
    if waiting:
        # Its turn is given: the next freed slot goes to the next one (its claim may postpone it again).
        WebhookDelivery.objects.filter(pk__in=waiting).update(next_attempt_at=now, waiting_for_slot=False)
    return waiting


def _waiting():
    return WebhookDelivery.objects.filter(
        status=Status.PENDING, is_test=False, attempt_started_at__isnull=True, waiting_for_slot=True
    ).order_by("created_at", "pk")
