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
from django.db.models import F, Q
from django.utils import timezone

from webhooks.health import endpoint_attempt_count
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

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


def not_due_or_busy(delivery_id: str, now: datetime) -> bool:
    """True when a worker's delivery is not due, or every slot of its endpoint is taken: no lock, no write.

    Most tasks that find nothing to do are duplicates of a delivery already
    sent by a thread that kept its endpoint's slot (`deliver_and_continue`).
    A due delivery of a busy endpoint is left as it is: each attempt counted
    as in flight here ends after this count, and then either takes the
    endpoint's oldest due delivery itself or hands its slot to it through the
    broker (`_record`), so the delivery is not forgotten. The locked claim
    re-checks everything.
    """
    row = (
        WebhookDelivery.objects.filter(pk=delivery_id)
        .values("endpoint_id", "status", "next_attempt_at", "is_test", "attempt_started_at")
        .first()
    )
    if row is None or row["status"] != Status.PENDING or row["is_test"]:
        return True
    if row["next_attempt_at"] is None or row["next_attempt_at"] > now:
        return True
    if row["attempt_started_at"] is not None:
        return False  # a lapsed lease: the locked claim records the cut-off attempt
    in_flight = WebhookDelivery.objects.filter(
        endpoint_id=row["endpoint_id"], attempt_started_at__isnull=False, next_attempt_at__gt=now
    ).count()
    return in_flight >= settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT


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
            deliveries.update(
                status=Status.FAILED,
                next_attempt_at=None,
                attempt_started_at=None,
                last_error=CUT_OFF,
                completed_at=now,
            )
            endpoint_attempt_count(
                endpoint, delivery, status=Status.FAILED, manual=False, failed=True, now=now
            )
            return None
        cap = 1 if endpoint.last_attempt_failed else settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT
        in_flight = (
            WebhookDelivery.objects.filter(
                endpoint=endpoint, attempt_started_at__isnull=False, next_attempt_at__gt=now
            )
            .exclude(pk=delivery.pk)
            .count()
        )
        if in_flight >= cap:
            # Busy: wait for a slot. The attempt that frees one hands this endpoint its next delivery.
            deliveries.update(
                next_attempt_at=now + timedelta(seconds=settings.WEBHOOK_BUSY_RETRY_SECONDS),
                waiting_for_slot=True,
            )
            return None
    return _start_attempt(delivery, endpoint, now, manual=manual)


def _start_attempt(
    delivery: WebhookDelivery, endpoint: WebhookEndpoint, now: datetime, *, manual: bool
) -> Claim:
    """Record the attempt as started and lease the delivery; the caller holds both rows' locks."""
    number = delivery.attempts + 1
    lease = now + timedelta(seconds=settings.WEBHOOK_DELIVERY_LEASE_SECONDS)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=Status.PENDING,
        attempts=number,
        attempt_started_at=now,
        next_attempt_at=lease,
        completed_at=None,
        waiting_for_slot=False,
    )
    WebhookAttempt.objects.create(delivery=delivery, number=number, manual=manual, created_at=now)
    return Claim(delivery=delivery, endpoint=endpoint, number=number, started_at=now, manual=manual)


def release(claims: list[Claim], now: datetime) -> None:
    """Claimed but not sent (the drain stopped): no attempt was made, and the delivery is due at once."""
    started = Q()
    for claim in claims:
        started |= Q(delivery_id=claim.delivery.pk, number=claim.number)
    WebhookAttempt.objects.filter(started).delete()
    WebhookDelivery.objects.filter(pk__in=[c.delivery.pk for c in claims]).update(
        attempts=F("attempts") - 1, attempt_started_at=None, next_attempt_at=now, waiting_for_slot=False
    )


def start_attempts(
    deliveries: list[WebhookDelivery], endpoint: WebhookEndpoint, now: datetime
) -> list[Claim]:
    """Claim a batch for the draining thread: one lease covering the drain's time left, attempts started."""
    if not deliveries:
        return []
    lease = now + timedelta(seconds=settings.WEBHOOK_DRAIN_SECONDS + settings.WEBHOOK_DELIVERY_LEASE_SECONDS)
    WebhookDelivery.objects.filter(pk__in=[d.pk for d in deliveries]).update(
        status=Status.PENDING,
        attempts=F("attempts") + 1,
        attempt_started_at=now,
        next_attempt_at=lease,
        completed_at=None,
        waiting_for_slot=False,
    )
    WebhookAttempt.objects.bulk_create(
        [WebhookAttempt(delivery=d, number=d.attempts + 1, manual=False, created_at=now) for d in deliveries]
    )
    return [
        Claim(delivery=d, endpoint=endpoint, number=d.attempts + 1, started_at=now, manual=False)
        for d in deliveries
    ]


def next_for_slot(endpoint: WebhookEndpoint, now: datetime) -> list[WebhookDelivery]:
    """The endpoint's oldest deliveries waiting for a slot or due now, locked; ones a claim holds are skipped."""
    return list(
        WebhookDelivery.objects.select_for_update(skip_locked=True)
        .filter(endpoint=endpoint, status=Status.PENDING, is_test=False, attempt_started_at__isnull=True)
        .filter(Q(waiting_for_slot=True) | Q(next_attempt_at__lte=now))
        .order_by("created_at", "pk")[: settings.WEBHOOK_DRAIN_BATCH]
    )


def next_waiting(endpoint_id: str, now: datetime) -> str | None:
    """The endpoint's oldest delivery waiting for a slot or due now: the slot just freed is its turn.

    Waiting deliveries were postponed by WEBHOOK_BUSY_RETRY_SECONDS; the one
    chosen is made due at once, so that a busy endpoint's queue drains as
    fast as its slots free, not at the postponement's pace. Retries waiting
    for their delay are not waiting for a slot and are left alone.
    """
    waiting = (
        WebhookDelivery.objects.filter(
            endpoint_id=endpoint_id, status=Status.PENDING, is_test=False, attempt_started_at__isnull=True
        )
        .filter(Q(waiting_for_slot=True) | Q(next_attempt_at__lte=now))
        # Postponed ones first: a due one not marked waiting still has its own task coming.
        .order_by("-waiting_for_slot", "created_at", "pk")
        .values_list("pk", flat=True)
        .first()
    )
    if waiting is not None:
        # Its turn is given: the next freed slot goes to the next one (its claim may postpone it again).
        WebhookDelivery.objects.filter(pk=waiting, waiting_for_slot=True).update(
            next_attempt_at=now, waiting_for_slot=False
        )
    return waiting
