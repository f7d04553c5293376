"""Sending deliveries: claim, POST the stored body, record the attempt, schedule or finish.

The database is the truth. A claim (`webhooks.claims`) holds the delivery for
the attempt's lease, longer than the attempt's total deadline, so a live
attempt is never handed to a second worker; if the worker dies, the lease
lapses and the periodic sweep hands the delivery to another worker. The
endpoint's counts and its auto-disable are `webhooks.health`. The body is never rebuilt: every attempt sends the same
stored bytes.

Isolation: every attempt ends by its deadline (`core.safehttp`), an endpoint
has at most WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT attempts in flight (one while
its last attempt failed), and deliveries run on their own queue in a thread
pool, so a slow receiver holds a few threads, never the whole worker.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core import safehttp
from core.tasks import Later
from observability.webhooks import observe_attempts
from webhooks.claims import (
    Claim,
    delivery_claim,
    event_claims,
    next_for_slot,
    next_waiting,
    not_due,
    release,
    start_attempts,
)
from webhooks.health import endpoint_attempt_count, endpoints_lock, endpoints_successes_count
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.retry import after_attempt
from webhooks.signing import delivery_headers
from webhooks.states import DELIVERY

DELIVER_WEBHOOK = Later("webhooks.tasks.deliver_webhook")

logger = logging.getLogger(__name__)


Status = WebhookDelivery.Status


@dataclass(frozen=True)
class AttemptResult:
    delivery_id: str
    response_code: int | None
    succeeded: bool
    attempts: int
    error: str = ""
    timed_out: bool = False


def attempt_delivery(
    delivery_id: str, *, manual: bool = False, synchronous: bool = False
) -> AttemptResult | None:
    """Make one attempt if the delivery is due (or, `manual`, failed); None if there was nothing to do.

    `synchronous` attempts run inside a web request (test pings, manual
    retries) and have the shorter WEBHOOK_SYNC_TIMEOUT_SECONDS deadline.
    """
    claim = delivery_claim(delivery_id, manual=manual, synchronous=synchronous or manual)
    if claim is None:
        return None
    deadline = (
        settings.WEBHOOK_SYNC_TIMEOUT_SECONDS if synchronous or manual else settings.WEBHOOK_TIMEOUT_SECONDS
    )
    started = timezone.now()
    outcomes, _ = _record([(claim, _send(claim, deadline), started)], [], may_continue=False)
    return outcomes[0] if outcomes else None


def deliver_and_continue(delivery_id: str) -> int:
    """The worker's entry for one delivery (a retry, a freed slot's turn, the sweep's): attempt it if it is
    due, then keep its endpoint's slot (`_drain`). Returns the number of attempts made."""
    if not_due(delivery_id, timezone.now()):
        return 0
    claim = delivery_claim(delivery_id, manual=False, synchronous=False)
    return _drain([claim] if claim is not None else [], pool=None)


def deliver_event(event_id: str) -> int:
    """The worker's entry for a new event: the first attempt of each of its deliveries, every endpoint at once.

    One message per event instead of one per delivery: the emitting
    transaction publishes once, and the worker claims every endpoint's
    delivery in one transaction (`event_claims`), sends to each endpoint on a
    thread of its own, so that a slow or unreachable receiver delays no
    other's attempt, and keeps each endpoint's slot (`_drain`). Paused and
    busy endpoints' deliveries wait as a single claim would leave them.
    Returns the number of attempts made.
    """
    claims = event_claims(event_id)
    if len({claim.endpoint.pk for claim in claims}) <= 1:
        return _drain(claims, pool=None)
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=len(claims), thread_name_prefix="webhook-send"
    ) as pool:
        return _drain(claims, pool=pool)


# After the first of a round's endpoints answers, how long the others are waited for, so that they are
# recorded together; one slower than this is recorded when it answers, holding back no other endpoint.
GATHER_SECONDS = 0.005

Sent = list[tuple[Claim, safehttp.PostResult, datetime]]


def _drain(claims: list[Claim], *, pool: concurrent.futures.Executor | None) -> int:
    """Send the claimed deliveries, then keep their endpoints' slots while there is work and time.

    Each endpoint's claims are sent one after the other (on the pool, one
    thread per endpoint, or here). As soon as an endpoint's batch is sent, it
    is recorded (with whatever else answered meanwhile), and after a batch of
    successes the same transaction claims that endpoint's next waiting or due
    deliveries (up to WEBHOOK_DRAIN_BATCH), which are sent the same way: a
    burst to an endpoint drains at the receiver's pace, with a few queries per
    batch instead of a claim and a record per delivery, and a burst of events
    costs a few queries per round, not per event. An endpoint stops at a
    failure and after WEBHOOK_DRAIN_SECONDS, so that one busy endpoint cannot
    keep a thread from the others; what it claimed but did not send is
    released and its slot handed on through the broker. Only this thread
    touches the database; the pool's threads only send.
    """
    stop_at = time.monotonic() + settings.WEBHOOK_DRAIN_SECONDS
    attempts = 0
    if pool is None:
        while claims:
            sent, unsent = _send_batch(claims, stop_at)
            attempts += len(sent)
            _, claims = _record(sent, unsent, may_continue=time.monotonic() < stop_at)
        return attempts
    pending: set[concurrent.futures.Future] = set()
    while claims or pending:
        for batch in _by_endpoint(claims):
            pending.add(pool.submit(_send_batch, batch, stop_at))
        done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
        if pending:
            more, pending = concurrent.futures.wait(pending, timeout=GATHER_SECONDS)
            done |= more
        sent, unsent = [], []
        for future in done:
            batch_sent, batch_unsent = future.result()
            sent += batch_sent
            unsent += batch_unsent
        attempts += len(sent)
        _, claims = _record(sent, unsent, may_continue=time.monotonic() < stop_at)
    return attempts


def _by_endpoint(claims: list[Claim]) -> list[list[Claim]]:
    batches: dict[str, list[Claim]] = {}
    for claim in claims:
        batches.setdefault(claim.endpoint.pk, []).append(claim)
    return list(batches.values())


def _send_batch(batch: list[Claim], stop_at: float) -> tuple[Sent, list[Claim]]:
    """One endpoint's claims, in order, until a failure or the drain's time is up (at least one is sent)."""
    sent: Sent = []
    for index, claim in enumerate(batch):
        if index and time.monotonic() >= stop_at:
            break
        started = timezone.now()
        result = _send(claim, settings.WEBHOOK_TIMEOUT_SECONDS)
        sent.append((claim, result, started))
        if not _succeeded(result):
            break
    return sent, batch[len(sent) :]


def _send(claim: Claim, deadline: float) -> safehttp.PostResult:
    try:
        headers = delivery_headers(claim.delivery, claim.endpoint, timezone.now())
        return safehttp.post(
            claim.endpoint.url,
            claim.delivery.body.encode(),
            headers,
            deadline_seconds=deadline,
            connect_timeout_seconds=settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS,
            allow_loopback=settings.WEBHOOK_ALLOW_LOCALHOST,
        )
    except Exception:
        logger.exception("Webhook delivery %s: the attempt could not be made", claim.delivery.pk)
        return safehttp.PostResult(None, 0, "internal error while sending")


def _succeeded(result: safehttp.PostResult) -> bool:
    return result.status is not None and 200 <= result.status < 300


_FINISHED_DELIVERY_FIELDS = [
    "status",
    "next_attempt_at",
    "attempt_started_at",
    "response_code",
    "response_time_ms",
    "last_error",
    "completed_at",
]


_FINISHED_ATTEMPT_FIELDS = ["response_code", "response_time_ms", "error", "finished_at", "created_at"]


@transaction.atomic
def _record(
    sent: list[tuple[Claim, safehttp.PostResult, datetime]], unsent: list[Claim], *, may_continue: bool
) -> tuple[list[AttemptResult], list[Claim]]:
    """Record what was sent and release what was not, in one transaction; returns the outcomes.

    With `may_continue`, for each endpoint whose every attempt here
    succeeded, the same transaction also claims its next deliveries and
    returns their claims. The claimed deliveries are locked first and the
    endpoint rows after them (in key order), as every claim takes them; other
    deliveries are only taken with SKIP LOCKED, so no transaction here ever
    waits for one that waits for it. What follows each attempt is the retry
    policy's (webhooks.retry); the steps here only persist it.
    """
    claims = [claim for claim, _, _ in sent] + unsent
    if not claims:
        return [], []
    endpoint_ids = sorted({claim.endpoint.pk for claim in claims})
    # The body is not needed to record (and would be decrypted for nothing).
    locked = (
        WebhookDelivery.objects.select_for_update()
        .filter(pk__in=[c.delivery.pk for c in claims])
        .defer("body")
    )
    rows = {delivery.pk: delivery for delivery in locked.order_by("pk")}

    def held(claim: Claim) -> WebhookDelivery | None:
        # Only an attempt that still holds its claim records it (a lapsed lease may have been taken
        # over); an endpoint deleted meanwhile took its deliveries.
        delivery = rows.get(claim.delivery.pk)
        return delivery if delivery is not None and delivery.attempt_started_at == claim.started_at else None

    now = timezone.now()
    finished = [
        (claim, delivery, result, started) for claim, result, started in sent if (delivery := held(claim))
    ]
    outcomes = [_finish_attempt(claim, delivery, result, now) for claim, delivery, result, _ in finished]
    _store_finished(finished, now)
    # The endpoints' rows, in key order, before any slot is freed or taken: a claim counting their slots
    # meanwhile waits for this transaction and then sees what it did (see `next_waiting`).
    endpoints_lock(endpoint_ids)
    released = [c for c in unsent if held(c) is not None]
    if released:
        release(released, now)
    following = _hand_on_slots(claims, released, finished, endpoint_ids, now, may_continue=may_continue)
    _count_for_endpoints(finished, now)
    return outcomes, following


Finished = tuple[Claim, WebhookDelivery, safehttp.PostResult, datetime]


def _counts_as_success(claim: Claim, delivery: WebhookDelivery) -> bool:
    """A success that keeps its endpoint's slot and counts toward its health: not a resend or a ping."""
    return delivery.status == Status.SUCCESS and not (claim.manual or delivery.is_test)


def _finish_attempt(
    claim: Claim, delivery: WebhookDelivery, result: safehttp.PostResult, now: datetime
) -> AttemptResult:
    """Set on the (locked) row what follows the attempt, as the retry policy says; its outcome."""
    code, succeeded, number = result.status, _succeeded(result), claim.number
    error = f"HTTP {code}" if code is not None and not succeeded else result.error
    following = after_attempt(
        succeeded=succeeded,
        number=number,
        once=claim.manual or delivery.is_test,
        delays=settings.WEBHOOK_RETRY_DELAYS,
        now=now,
    )
    if following.countdown is not None:
        transaction.on_commit(
            partial(DELIVER_WEBHOOK.apply_async, (delivery.pk,), countdown=following.countdown)
        )
    DELIVERY.enter(delivery, following.status)  # from pending: the attempt started (webhooks.states)
    delivery.next_attempt_at, delivery.attempt_started_at = following.attempt_at, None
    delivery.response_code, delivery.response_time_ms = code, result.elapsed_ms
    delivery.last_error = error[:500]
    delivery.completed_at = now if following.done else None
    logger.info(
        "Webhook delivery %s to endpoint %s, attempt %s: %s in %s ms",
        delivery.pk,
        claim.endpoint.pk,
        number,
        f"HTTP {code}" if code is not None else error,
        result.elapsed_ms,
    )
    return AttemptResult(
        delivery_id=delivery.pk,
        response_code=code,
        succeeded=succeeded,
        attempts=number,
        error=error,
        timed_out=result.timed_out,
    )


def _store_finished(finished: list[Finished], now: datetime) -> None:
    """The finished deliveries' rows and their attempts' rows, two statements for the batch."""
    if not finished:
        return
    transaction.on_commit(
        partial(
            observe_attempts,
            [(result.status, result.timed_out, result.elapsed_ms) for _, _, result, _ in finished],
        )
    )
    _update_rows(
        WebhookDelivery,
        _FINISHED_DELIVERY_FIELDS,
        ["id"],
        [[getattr(d, name) for name in _FINISHED_DELIVERY_FIELDS] + [d.pk] for _, d, _, _ in finished],
    )
    _update_rows(
        WebhookAttempt,
        _FINISHED_ATTEMPT_FIELDS,
        ["delivery", "number"],
        [
            [result.status, result.elapsed_ms, delivery.last_error, now, started, delivery.pk, claim.number]
            for claim, delivery, result, started in finished
        ],
    )


def _hand_on_slots(
    claims: list[Claim],
    released: list[Claim],
    finished: list[Finished],
    endpoint_ids: list[str],
    now: datetime,
    *,
    may_continue: bool,
) -> list[Claim]:
    """An endpoint whose every attempt here succeeded keeps its slot: the same transaction claims its next
    deliveries (their claims). Any other endpoint hands the slot it frees to its oldest delivery waiting."""
    succeeded_by_endpoint: dict[str, bool] = {}
    for claim, delivery, _, _ in finished:
        endpoint_id = claim.endpoint.pk
        succeeded_by_endpoint[endpoint_id] = succeeded_by_endpoint.get(
            endpoint_id, True
        ) and _counts_as_success(claim, delivery)
    stopped = {claim.endpoint.pk for claim in released} | {c.endpoint.pk for c in claims if c.manual}
    continuing = [
        endpoint_id
        for endpoint_id in endpoint_ids
        if may_continue and succeeded_by_endpoint.get(endpoint_id) and endpoint_id not in stopped
    ]
    following: list[Claim] = []
    if continuing:
        # Read afresh: a pause or a new URL applies to the next attempts.
        fresh = WebhookEndpoint.objects.filter(pk__in=continuing, is_active=True).order_by("pk")
        following = start_attempts([(delivery, e) for e in fresh for delivery in next_for_slot(e, now)], now)
    handing_on = sorted(set(endpoint_ids) - {claim.endpoint.pk for claim in following})
    if handing_on:
        waiting = next_waiting(handing_on, now)
        if waiting:
            transaction.on_commit(lambda: [DELIVER_WEBHOOK.delay(delivery_id) for delivery_id in waiting])
    return following


def _count_for_endpoints(finished: list[Finished], now: datetime) -> None:
    """Each endpoint's health: its successes in one update, each failure (or resend) on its own."""
    successes = [(c, d) for c, d, _, _ in finished if _counts_as_success(c, d)]
    if successes:
        per_endpoint: dict[str, int] = {}
        for claim, _ in successes:
            per_endpoint[claim.endpoint.pk] = per_endpoint.get(claim.endpoint.pk, 0) + 1
        endpoints_successes_count(per_endpoint, now)
    counted = {d.pk for _, d in successes}
    for claim, delivery, _, _ in finished:
        if delivery.pk not in counted:
            endpoint_attempt_count(
                claim.endpoint, delivery, status=delivery.status, manual=claim.manual, failed=True, now=now
            )


def _update_rows(model, fields: list[str], keys: list[str], rows: list[list]) -> None:
    """One UPDATE statement run for many rows (executemany), each row its values then its keys.

    `bulk_update` builds a CASE expression per field and row, which cost more
    Python than the database work it saves: a 16-delivery batch spent most of
    its time there.
    """
    meta, quote = model._meta, connection.ops.quote_name
    columns = [meta.get_field(name) for name in fields + keys]
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in columns[: len(fields)])
    match = " AND ".join(f"{quote(f.column)} = %s" for f in columns[len(fields) :])
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {match}"  # noqa: S608 - names from the model
    params = [
        [f.get_db_prep_save(value, connection) for f, value in zip(columns, row, strict=True)] for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def due_delivery_ids(*, limit: int = 500) -> list[str]:
    return list(
        # Test pings are sent by the request that created them, never by the sweep.
        WebhookDelivery.objects.filter(
            status=Status.PENDING, is_test=False, next_attempt_at__lte=timezone.now()
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
