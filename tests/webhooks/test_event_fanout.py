"""One message per event: its deliveries' first attempts are claimed, sent and recorded together, each endpoint
on its own thread, so a slow receiver delays no other (issue 46, item 4)."""

import threading
from datetime import timedelta

import pytest
from celery.signals import before_task_publish
from django.db import connection
from django.utils import timezone

from tests.conftest import wait_for
from tests.webhooks.conftest import make_endpoint
from webhooks.delivery import deliver_event
from webhooks.events import emit_event
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

Status = WebhookDelivery.Status


def _endpoints(organization, receiver, count):
    endpoints = []
    for n in range(count):
        receiver.expect_request(f"/hook{n}", method="POST").respond_with_data("ok")
        endpoints.append(make_endpoint(organization, receiver.url_for(f"/hook{n}"))[0])
    return endpoints


@pytest.mark.django_db
def test_an_event_is_one_message_and_one_task_sends_to_every_endpoint(
    organization, receiver, django_capture_on_commit_callbacks
):
    endpoints = _endpoints(organization, receiver, 3)
    published = []

    def count(sender=None, body=None, **_):
        published.append((sender, body[0] if isinstance(body, tuple) else body))

    before_task_publish.connect(count)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            event = emit_event(organization=organization, event_type="payment.completed", data={"n": 1})
    finally:
        before_task_publish.disconnect(count)
    # One message for the event (to a queue no worker of this test reads), not one per endpoint.
    assert published == [("webhooks.tasks.deliver_event_webhooks", (event.pk,))]

    assert deliver_event(event.pk) == 3

    assert sorted(request.path for request, _ in receiver.log) == ["/hook0", "/hook1", "/hook2"]
    deliveries = WebhookDelivery.objects.filter(event=event)
    assert {(d.status, d.attempts, d.attempt_started_at) for d in deliveries} == {(Status.SUCCESS, 1, None)}
    assert sorted(WebhookAttempt.objects.values_list("number", "response_code")) == [(1, 200)] * 3
    assert [e.success_count for e in WebhookEndpoint.objects.filter(pk__in=[e.pk for e in endpoints])] == [
        1
    ] * 3
    assert deliver_event(event.pk) == 0  # a redelivered message sends nothing again
    assert len(receiver.log) == 3


@pytest.mark.django_db
def test_paused_and_busy_endpoints_keep_their_deliveries_for_later(organization, receiver, settings):
    settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = 1
    sending, paused, busy = _endpoints(organization, receiver, 3)
    earlier = emit_event(organization=organization, event_type="payment.completed", data={"n": 0})
    now = timezone.now()
    WebhookDelivery.objects.filter(event=earlier, endpoint=busy).update(  # an attempt in flight
        attempts=1, attempt_started_at=now, next_attempt_at=now + timedelta(minutes=1)
    )
    WebhookDelivery.objects.filter(event=earlier).exclude(endpoint=busy).delete()
    event = emit_event(organization=organization, event_type="payment.completed", data={"n": 1})
    WebhookEndpoint.objects.filter(pk=paused.pk).update(is_active=False)

    assert deliver_event(event.pk) == 1

    assert [request.path for request, _ in receiver.log] == ["/hook0"]
    rows = {d.endpoint_id: d for d in WebhookDelivery.objects.filter(event=event)}
    assert rows[sending.pk].status == Status.SUCCESS
    assert (rows[paused.pk].status, rows[paused.pk].attempts, rows[paused.pk].next_attempt_at) == (
        Status.PENDING,
        0,
        None,
    )  # resuming the endpoint reschedules it
    assert (rows[busy.pk].attempts, rows[busy.pk].waiting_for_slot) == (0, True)
    assert rows[busy.pk].next_attempt_at > timezone.now()


def _waiting_behind_an_event(organization, receiver, settings):
    settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = 1
    endpoints = _endpoints(organization, receiver, 2)
    waiting = emit_event(organization=organization, event_type="payment.completed", data={"n": 0})
    later = timezone.now() + timedelta(minutes=1)
    WebhookDelivery.objects.filter(event=waiting).update(waiting_for_slot=True, next_attempt_at=later)
    event = emit_event(organization=organization, event_type="payment.completed", data={"n": 1})
    return endpoints, waiting, event


@pytest.mark.django_db
def test_an_events_task_keeps_the_slots_it_frees_for_the_endpoints_waiting_deliveries(
    organization, receiver, settings
):
    _, _, event = _waiting_behind_an_event(organization, receiver, settings)

    assert deliver_event(event.pk) == 4  # its own two, then each endpoint's waiting one

    assert set(WebhookDelivery.objects.values_list("status", "attempts", "waiting_for_slot")) == {
        (Status.SUCCESS, 1, False)
    }
    bodies = [request.get_json()["data"]["n"] for request, _ in receiver.log]
    assert sorted(bodies) == [0, 0, 1, 1]


@pytest.mark.django_db
def test_when_its_time_is_up_an_events_task_hands_each_freed_slot_to_the_waiting_delivery(
    organization, receiver, settings
):
    (first, second), waiting, event = _waiting_behind_an_event(organization, receiver, settings)
    settings.WEBHOOK_DRAIN_SECONDS = 0

    assert deliver_event(event.pk) == 2

    handed = WebhookDelivery.objects.filter(event=waiting)
    assert {d.endpoint_id for d in handed} == {first.pk, second.pk}
    for delivery in handed:  # its turn: due at once, no longer postponed, its message queued
        assert delivery.waiting_for_slot is False
        assert delivery.next_attempt_at <= timezone.now()
        assert delivery.attempts == 0


@pytest.mark.django_db(transaction=True)
def test_a_receiver_that_hangs_delays_no_other_endpoint(organization, receiver, slow_server, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 4
    hanging = slow_server("hang")
    fast = _endpoints(organization, receiver, 2)
    slow, _ = make_endpoint(organization, hanging.url)
    event = emit_event(organization=organization, event_type="payment.completed", data={"n": 1})
    worker = threading.Thread(target=lambda: (deliver_event(event.pk), connection.close()))
    worker.start()

    # The fast endpoints' attempts are sent and recorded while the hanging one is still in flight.
    wait_for(
        lambda: WebhookDelivery.objects.filter(event=event, status=Status.SUCCESS).count() == 2, timeout=3.5
    )
    held = WebhookDelivery.objects.get(event=event, endpoint=slow)
    assert held.attempt_started_at is not None and held.status == Status.PENDING
    assert set(WebhookEndpoint.objects.filter(success_count=1).values_list("pk", flat=True)) == {
        e.pk for e in fast
    }

    worker.join(timeout=30)
    held.refresh_from_db()
    assert (held.status, held.attempts, held.attempt_started_at) == (Status.PENDING, 1, None)
    assert held.next_attempt_at > timezone.now()  # its retry, on the configured delay
    assert "deadline" in held.last_error or "timed out" in held.last_error.lower()


@pytest.mark.django_db(transaction=True)
def test_concurrent_events_to_shared_endpoints_are_each_delivered_once(organization, receiver, settings):
    settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = 8  # a slot for every thread: each event's task sends it all
    endpoints = _endpoints(organization, receiver, 4)
    events = [
        emit_event(organization=organization, event_type="payment.completed", data={"n": n})
        for n in range(24)
    ]
    queue = list(reversed(events))
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                if not queue:
                    break
                event = queue.pop()
            deliver_event(event.pk)
        connection.close()

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(receiver.log) == 24 * 4
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {(Status.SUCCESS, 1)}
    assert WebhookAttempt.objects.count() == 24 * 4
    assert sorted(WebhookEndpoint.objects.values_list("success_count", flat=True)) == [24] * len(endpoints)
