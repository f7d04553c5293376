"""A worker thread keeps its endpoint's slot: after a success it takes the endpoint's next due delivery."""

from datetime import timedelta

import pytest
from django.utils import timezone
from werkzeug import Response

from tests.factories import OrganizationFactory
from tests.webhooks.conftest import make_endpoint
from webhooks.delivery import deliver_and_continue
from webhooks.events import emit_event
from webhooks.models import WebhookAttempt, WebhookDelivery

pytestmark = pytest.mark.django_db


def _emit(organization, count):
    for i in range(count):
        emit_event(organization=organization, event_type="payment.completed", data={"n": i})
    return list(
        WebhookDelivery.objects.filter(endpoint__organization=organization).order_by("created_at", "pk")
    )


def test_one_task_drains_its_endpoints_due_deliveries_oldest_first(organization, receiver, settings):
    settings.WEBHOOK_DRAIN_SECONDS = 60
    make_endpoint(organization, receiver.url_for("/hook"))
    other_org = OrganizationFactory(slug="other")
    make_endpoint(other_org, receiver.url_for("/other"))
    seen = []
    receiver.expect_request("/hook", method="POST").respond_with_handler(
        lambda request: (seen.append(request.get_json()["data"]["n"]), Response("ok"))[1]
    )
    deliveries = _emit(organization, 5)
    foreign = _emit(other_org, 1)[0]
    later = deliveries[4]
    WebhookDelivery.objects.filter(pk=later.pk).update(next_attempt_at=timezone.now() + timedelta(minutes=1))

    assert deliver_and_continue(deliveries[0].pk) == 4

    assert seen == [0, 1, 2, 3]  # oldest first; a delivery not yet due is left for its time
    statuses = dict(WebhookDelivery.objects.values_list("pk", "status"))
    assert [statuses[d.pk] for d in deliveries] == ["success"] * 4 + ["pending"]
    assert statuses[foreign.pk] == "pending"  # another endpoint's delivery is its own thread's business
    assert sorted(WebhookAttempt.objects.values_list("number", flat=True)) == [1, 1, 1, 1]
    assert deliver_and_continue(deliveries[1].pk) == 0  # its own task, arriving later, finds nothing to do


def test_the_drain_stops_after_a_failure_and_after_its_time(organization, receiver, settings):
    make_endpoint(organization, receiver.url_for("/hook"))
    receiver.expect_request("/hook", method="POST").respond_with_data("down", status=503)
    deliveries = _emit(organization, 3)

    assert deliver_and_continue(deliveries[0].pk) == 1  # a failing receiver is not hammered

    settings.WEBHOOK_DRAIN_SECONDS = 0
    receiver.clear()
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    WebhookDelivery.objects.filter(endpoint__organization=organization).update(next_attempt_at=timezone.now())
    assert deliver_and_continue(deliveries[1].pk) == 1


def test_a_busy_endpoints_delivery_waits_for_a_slot_and_a_freed_slot_takes_it(
    organization, receiver, settings
):
    from core.safehttp import PostResult
    from webhooks.claims import Claim
    from webhooks.delivery import _record

    settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = 2
    endpoint, _ = make_endpoint(organization, receiver.url_for("/hook"))
    deliveries = _emit(organization, 3)
    now = timezone.now()
    WebhookDelivery.objects.filter(pk__in=[d.pk for d in deliveries[:2]]).update(
        attempt_started_at=now, next_attempt_at=now + timedelta(minutes=1), attempts=1
    )
    for delivery in deliveries[:2]:
        WebhookAttempt.objects.create(delivery=delivery, number=1, created_at=now)

    assert deliver_and_continue(deliveries[2].pk) == 0

    waiting = WebhookDelivery.objects.get(pk=deliveries[2].pk)
    assert (waiting.attempts, waiting.waiting_for_slot) == (0, True)  # no message of its own is coming
    assert waiting.next_attempt_at > timezone.now()  # the sweep's fallback, if no slot were ever freed
    assert not receiver.log

    # The first in-flight attempt ends: its thread takes the waiting delivery with the slot it frees.
    first = WebhookDelivery.objects.get(pk=deliveries[0].pk)
    claim = Claim(delivery=first, endpoint=endpoint, number=1, started_at=now, manual=False)
    outcomes, following = _record([(claim, PostResult(200, 3), now)], [], may_continue=True)

    assert [o.succeeded for o in outcomes] == [True]
    assert [(c.delivery.pk, c.number) for c in following] == [(deliveries[2].pk, 1)]
    assert WebhookDelivery.objects.get(pk=deliveries[2].pk).attempt_started_at is not None


def test_a_drain_claims_batches_and_records_each_attempt_when_it_was_really_sent(
    organization, receiver, settings, django_assert_max_num_queries
):
    settings.WEBHOOK_DRAIN_SECONDS = 60
    settings.WEBHOOK_DRAIN_BATCH = 8
    make_endpoint(organization, receiver.url_for("/hook"))
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    deliveries = _emit(organization, 20)

    with django_assert_max_num_queries(60):  # a claim and a record per delivery took 10 each
        assert deliver_and_continue(deliveries[0].pk) == 20

    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("success", 1)}
    attempts = list(WebhookAttempt.objects.order_by("created_at", "pk"))
    assert [a.delivery_id for a in attempts] == [d.pk for d in deliveries]
    assert all(a.response_code == 200 and a.finished_at >= a.created_at for a in attempts)
    assert len({a.created_at for a in attempts}) == 20  # its own send time, not the batch's claim time


def test_what_a_stopped_drain_claimed_but_did_not_send_is_released_due_with_no_attempt(
    organization, receiver, settings
):
    import time

    settings.WEBHOOK_DRAIN_SECONDS = 0.5
    settings.WEBHOOK_DRAIN_BATCH = 4

    def slow(_request):
        time.sleep(0.3)
        return Response("ok")

    make_endpoint(organization, receiver.url_for("/hook"))
    receiver.expect_request("/hook", method="POST").respond_with_handler(slow)
    deliveries = _emit(organization, 5)

    assert deliver_and_continue(deliveries[0].pk) == 2  # 0.3 s, then a batch of 4 of which one fits

    rows = {d.pk: d for d in WebhookDelivery.objects.all()}
    assert [rows[d.pk].status for d in deliveries] == ["success", "success", "pending", "pending", "pending"]
    for n, released in enumerate(deliveries[2:]):
        row = rows[released.pk]
        # The oldest is handed the freed slot (its message queued); the others wait for the next ones.
        assert (row.attempts, row.attempt_started_at, row.waiting_for_slot) == (0, None, n > 0)
        assert row.next_attempt_at <= timezone.now()
    assert WebhookAttempt.objects.count() == 2


def test_a_failure_in_a_batch_stops_it_and_is_scheduled_for_its_retry(organization, receiver, settings):
    settings.WEBHOOK_DRAIN_SECONDS = 60
    settings.WEBHOOK_DRAIN_BATCH = 4
    make_endpoint(organization, receiver.url_for("/hook"))
    answers = iter([200, 200, 503])
    receiver.expect_request("/hook", method="POST").respond_with_handler(
        lambda _request: Response("x", status=next(answers, 200))
    )
    deliveries = _emit(organization, 5)

    assert deliver_and_continue(deliveries[0].pk) == 3  # 1, then a batch of 4 that stops at its 2nd

    rows = {d.pk: d for d in WebhookDelivery.objects.all()}
    assert [(rows[d.pk].status, rows[d.pk].attempts) for d in deliveries] == [
        ("success", 1),
        ("success", 1),
        ("pending", 1),
        ("pending", 0),
        ("pending", 0),
    ]
    retried = rows[deliveries[2].pk]
    assert retried.next_attempt_at > timezone.now() + timedelta(seconds=30)  # the first retry delay
    assert retried.last_error == "HTTP 503"
    endpoint = retried.endpoint
    assert (endpoint.success_count, endpoint.last_attempt_failed) == (2, True)
