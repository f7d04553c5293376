"""Webhook delivery by real Celery worker processes, to a real local HTTP receiver."""

import itertools
import threading
import time

import pytest
from django.utils import timezone
from werkzeug import Response

from tests.conftest import client_for, wait_for
from tests.factories import make_api_key
from tests.webhooks.conftest import make_endpoint, verify
from webhooks.models import WebhookAttempt, WebhookDelivery
from webhooks.tasks import sweep_due_deliveries

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _received(receiver, count):
    wait_for(lambda: len(receiver.log) >= count, timeout=60)
    return receiver.log


def test_expiring_a_session_delivers_a_signed_checkout_expired(start_worker, organization, receiver):
    endpoint, secret = make_endpoint(organization, receiver.url_for("/hook"), events=["checkout.expired"])
    verified = []
    receiver.expect_request("/hook", method="POST").respond_with_handler(
        lambda request: (
            verified.append((request.headers["X-Service-Delivery-Id"], verify(request, secret))),
            Response("ok"),
        )[1]
    )
    start_worker()
    _, raw = make_api_key(organization, permissions=["write"])
    session_id = (
        client_for(raw)
        .post("/checkout-sessions", {"metadata": {"cart": "7"}}, format="json")
        .json()["data"]["id"]
    )

    assert client_for(raw).post(f"/checkout-sessions/{session_id}/expire").status_code == 200

    wait_for(lambda: WebhookDelivery.objects.filter(status="success").exists())
    delivery_id, body = verified[0]
    assert delivery_id == WebhookDelivery.objects.get().id
    assert body["event"] == "checkout.expired"
    assert body["webhook_id"] == endpoint.id
    assert body["data"]["id"] == session_id
    assert body["data"]["metadata"] == {"cart": "7"}
    endpoint.refresh_from_db()
    assert endpoint.success_count == 1


def test_failing_receiver_is_retried_on_the_configured_delays_until_failed(
    start_worker, organization, receiver
):
    endpoint, _ = make_endpoint(organization, receiver.url_for("/hook"))
    receiver.expect_request("/hook").respond_with_response(Response("down", status=500))
    start_worker(WEBHOOK_RETRY_DELAYS="1,2,3")
    _, raw = make_api_key(organization, permissions=["write"])
    session_id = client_for(raw).post("/checkout-sessions", {}, format="json").json()["data"]["id"]
    client_for(raw).post(f"/checkout-sessions/{session_id}/expire")

    wait_for(lambda: WebhookDelivery.objects.filter(status="failed").exists(), timeout=90)

    delivery = WebhookDelivery.objects.get()
    assert delivery.attempts == 4
    times = list(
        WebhookAttempt.objects.filter(delivery=delivery)
        .order_by("number")
        .values_list("created_at", flat=True)
    )
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(times)]
    for gap, delay in zip(gaps, (1, 2, 3), strict=True):
        assert gap >= delay  # never before its delay
    assert len({r.headers["X-Service-Delivery-Id"] for r, _ in receiver.log}) == 1
    assert len({r.get_data() for r, _ in receiver.log}) == 1  # the same bytes every time
    endpoint.refresh_from_db()
    assert endpoint.failure_count == 1


def test_worker_killed_mid_delivery_loses_nothing(start_worker, organization, receiver):
    """SIGKILL the worker while the receiver holds the request open; the sweep re-sends the same signed body."""
    _endpoint, secret = make_endpoint(organization, receiver.url_for("/hook"))
    first_arrived, release = threading.Event(), threading.Event()

    def handler(request):
        verify(request, secret)
        if not first_arrived.is_set():
            first_arrived.set()
            release.wait(30)
        return Response("ok")

    receiver.expect_request("/hook").respond_with_handler(handler)
    lease = {"WEBHOOK_TIMEOUT_SECONDS": "1", "WEBHOOK_DELIVERY_LEASE_SECONDS": "11"}
    doomed = start_worker(**lease)
    _, raw = make_api_key(organization, permissions=["write"])
    session_id = client_for(raw).post("/checkout-sessions", {}, format="json").json()["data"]["id"]
    client_for(raw).post(f"/checkout-sessions/{session_id}/expire")

    assert first_arrived.wait(60), "the delivery never reached the receiver"
    doomed.kill()
    release.set()
    delivery = WebhookDelivery.objects.get()
    # The attempt was recorded when it started; the delivery stays pending: nothing is lost.
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert WebhookAttempt.objects.get(delivery=delivery).finished_at is None

    start_worker(**lease)
    time.sleep(
        max(0.0, (delivery.next_attempt_at - timezone.now()).total_seconds()) + 0.5
    )  # the claim lapses
    sweep_due_deliveries.delay()

    wait_for(lambda: WebhookDelivery.objects.filter(status="success").exists())
    first, second = (request for request, _ in _received(receiver, 2)[:2])
    assert first.get_data() == second.get_data()
    assert first.headers["X-Service-Signature"] == second.headers["X-Service-Signature"]
    assert first.headers["X-Service-Delivery-Id"] == second.headers["X-Service-Delivery-Id"] == delivery.id
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == delivery.event_id
    attempts = list(WebhookAttempt.objects.filter(delivery=delivery).order_by("number"))
    assert [a.error.startswith("cut off") for a in attempts] == [True, False]
    assert (attempts[1].response_code, WebhookDelivery.objects.get().attempts) == (200, 2)
