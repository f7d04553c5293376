"""Deliveries against a real local HTTP receiver (pytest-httpserver), driven attempt by attempt."""

import threading
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from werkzeug import Response

from tests.conftest import client_for
from tests.factories import make_api_key
from tests.webhooks.conftest import make_due, make_endpoint, verify
from webhooks.delivery import attempt_delivery
from webhooks.events import emit_event
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db

DATA = {"id": "order-1", "amount": "100"}


@pytest.fixture
def endpoint(organization, receiver):
    return make_endpoint(organization, receiver.url_for("/hook"))


def _delivery(organization, event_type="payment.completed"):
    emit_event(organization=organization, event_type=event_type, data=DATA)
    return WebhookDelivery.objects.latest("created_at")


def test_signed_delivery_with_contract_headers_and_body(organization, endpoint, receiver):
    endpoint, secret = endpoint
    seen = []
    receiver.expect_request("/hook", method="POST").respond_with_handler(
        lambda request: (seen.append((dict(request.headers), verify(request, secret))), Response("ok"))[1]
    )
    delivery = _delivery(organization)

    result = attempt_delivery(delivery.id)

    assert result.succeeded and result.response_code == 200
    headers, body = seen[0]
    assert body == {
        "event": "payment.completed",
        "webhook_id": endpoint.id,
        "timestamp": body["timestamp"],
        "livemode": True,  # a live organization's (platform_api.testmode)
        "data": DATA,
    }
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Service-Webhook-Id"] == endpoint.id
    assert headers["X-Service-Delivery-Id"] == delivery.id
    assert headers["X-Service-Event"] == "payment.completed"
    assert headers["X-Service-Timestamp"] == body["timestamp"]
    assert "X-Service-Test" not in headers
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("success", 1, 200)
    endpoint.refresh_from_db()
    assert (endpoint.success_count, endpoint.failure_count) == (1, 0)
    assert endpoint.last_triggered_at is not None


def test_fan_out_only_to_active_subscribed_endpoints(organization, receiver):
    make_endpoint(organization, receiver.url_for("/all"))
    make_endpoint(organization, receiver.url_for("/payments"), events=["payment.completed"])
    make_endpoint(organization, receiver.url_for("/checkouts"), events=["checkout.expired"])
    paused, _ = make_endpoint(organization, receiver.url_for("/paused"))
    WebhookEndpoint.objects.filter(pk=paused.pk).update(is_active=False)

    emit_event(organization=organization, event_type="payment.completed", data=DATA)

    urls = sorted(
        d.endpoint.url.rsplit("/", 1)[1] for d in WebhookDelivery.objects.select_related("endpoint")
    )
    assert urls == ["all", "payments"]


def test_retries_follow_the_configured_delays_then_fail(organization, endpoint, receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS = [60, 600, 3600]
    receiver.expect_request("/hook").respond_with_response(Response("nope", status=500))
    delivery = _delivery(organization)

    for attempt, delay in enumerate([60, 600, 3600], start=1):
        before = timezone.now()
        attempt_delivery(delivery.id)
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("pending", attempt, 500)
        wait = (delivery.next_attempt_at - before).total_seconds()
        assert delay - 1 <= wait <= delay + 5
        assert attempt_delivery(delivery.id) is None  # not due yet: nothing is sent
        make_due(delivery)

    attempt_delivery(delivery.id)

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 4, None)
    assert len(receiver.log) == 4
    assert list(WebhookAttempt.objects.filter(delivery=delivery).values_list("number", "response_code")) == [
        (1, 500),
        (2, 500),
        (3, 500),
        (4, 500),
    ]
    endpoint[0].refresh_from_db()
    assert (endpoint[0].failure_count, endpoint[0].consecutive_failures) == (1, 1)


def test_redirects_and_timeouts_are_failures(organization, endpoint, receiver, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    receiver.expect_ordered_request("/hook").respond_with_response(
        Response("", status=302, headers={"Location": "/elsewhere"})
    )
    stall = threading.Event()
    receiver.expect_ordered_request("/hook").respond_with_handler(
        lambda r: (stall.wait(2), Response("late"))[1]
    )
    delivery = _delivery(organization)

    first = attempt_delivery(delivery.id)
    make_due(delivery)
    second = attempt_delivery(delivery.id)
    stall.set()

    assert (first.succeeded, first.response_code) == (False, 302)
    assert (second.succeeded, second.response_code) == (False, None)
    assert WebhookAttempt.objects.get(delivery=delivery, number=2).error.startswith("timed out")


def test_unreachable_receiver_is_a_failed_attempt_not_a_crash(organization):
    endpoint, _ = make_endpoint(organization, "http://127.0.0.1:9/closed")
    emit_event(organization=organization, event_type="payment.failed", data=DATA)
    result = attempt_delivery(WebhookDelivery.objects.get(endpoint=endpoint).id)
    assert result.succeeded is False
    assert "connection failed" in WebhookAttempt.objects.get().error


def test_connection_to_a_non_public_address_is_refused_at_send_time(
    organization, receiver, settings, monkeypatch
):
    """DNS rebinding: the host was public when saved, and now resolves to loopback."""
    import socket

    real = socket.getaddrinfo
    answers = {"rebind.example.com": "93.184.216.34"}

    def fake(host, *args, **kwargs):
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], receiver.port))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    settings.WEBHOOK_ALLOW_LOCALHOST = False
    make_endpoint(organization, f"https://rebind.example.com:{receiver.port}/hook")
    answers["rebind.example.com"] = "127.0.0.1"
    emit_event(organization=organization, event_type="payment.failed", data=DATA)

    result = attempt_delivery(WebhookDelivery.objects.get().id)

    assert result.succeeded is False
    assert len(receiver.log) == 0
    assert WebhookAttempt.objects.get().error == (
        "The host 'rebind.example.com' resolves to a non-public address (loopback); it is not called."
    )


def test_ten_failed_deliveries_disable_the_endpoint_and_email_once(
    organization, endpoint, receiver, settings
):
    settings.WEBHOOK_RETRY_DELAYS = []  # each delivery fails on its first attempt
    receiver.expect_request("/hook").respond_with_response(Response("down", status=503))

    for _ in range(9):
        attempt_delivery(_delivery(organization).id)
    endpoint[0].refresh_from_db()
    assert endpoint[0].is_active is True

    attempt_delivery(_delivery(organization).id)

    endpoint[0].refresh_from_db()
    assert endpoint[0].is_active is False
    assert endpoint[0].failure_count == 10
    assert "10 consecutive" in endpoint[0].disabled_reason


def test_disable_notice_goes_through_the_notification_outbox_and_is_retried(
    organization, endpoint, receiver, settings, monkeypatch
):
    """The notice is a notification email written with the disabling: a mail server that fails once delays it,
    it does not lose it (it was sent outside any retry before)."""
    from webhooks import notifications
    from webhooks.models import NotificationEmail

    settings.WEBHOOK_RETRY_DELAYS = []
    settings.NOTIFICATION_RETRY_DELAYS = [0]
    receiver.expect_request("/hook").respond_with_response(Response("down", status=503))
    for _ in range(12):
        attempt_delivery(_delivery(organization).id) if WebhookEndpoint.objects.get().is_active else None

    email = NotificationEmail.objects.get()
    assert (email.to_address, email.event_type, email.status) == (
        organization.contact_email,
        "webhook.disabled",
        "pending",
    )
    assert endpoint[0].id in email.subject and len(mail.outbox) == 0

    real_send_mail = notifications.send_mail
    monkeypatch.setattr(
        notifications, "send_mail", lambda *a, **k: (_ for _ in ()).throw(OSError("smtp down"))
    )
    assert notifications.send(email.id) == "retry"
    monkeypatch.setattr(notifications, "send_mail", real_send_mail)
    assert notifications.send(email.id) == "sent"

    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [organization.contact_email]
    assert endpoint[0].id in mail.outbox[0].subject


def test_a_success_resets_the_consecutive_failures(organization, endpoint, receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS = []
    receiver.expect_ordered_request("/hook").respond_with_response(Response("down", status=500))
    receiver.expect_ordered_request("/hook").respond_with_response(Response("ok"))
    attempt_delivery(_delivery(organization).id)
    attempt_delivery(_delivery(organization).id)
    endpoint[0].refresh_from_db()
    assert (endpoint[0].consecutive_failures, endpoint[0].success_count, endpoint[0].failure_count) == (
        0,
        1,
        1,
    )


def test_paused_endpoint_holds_deliveries_until_resumed(organization, endpoint, receiver, admin_client):
    receiver.expect_request("/hook").respond_with_data("ok")
    delivery = _delivery(organization)
    WebhookEndpoint.objects.filter(pk=endpoint[0].pk).update(is_active=False)

    assert attempt_delivery(delivery.id) is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.next_attempt_at, len(receiver.log)) == ("pending", None, 0)

    admin_client.patch(f"/api/v1/webhooks/{endpoint[0].id}", {"is_active": True}, format="json")
    assert attempt_delivery(delivery.id).succeeded is True


def test_test_delivery_is_synchronous_and_recorded(admin_client, endpoint, receiver):
    endpoint, secret = endpoint
    seen = []
    receiver.expect_request("/hook").respond_with_handler(
        lambda request: (
            seen.append((request.headers.get("X-Service-Test"), verify(request, secret))),
            Response("ok"),
        )[1]
    )

    response = admin_client.post(f"/api/v1/webhooks/{endpoint.id}/test")

    assert response.status_code == 200
    data = response.json()["data"]
    assert data == {
        "delivery_id": data["delivery_id"],
        "status": "sent",
        "response_code": 200,
        "success": True,
        "error": None,
    }
    assert seen[0][0] == "true"
    assert seen[0][1]["event"] == "test.ping"
    history = admin_client.get(f"/api/v1/webhooks/{endpoint.id}/deliveries").json()["data"]
    assert history[0]["id"] == data["delivery_id"]
    assert (history[0]["event_type"], history[0]["status"], history[0]["attempts"]) == (
        "test.ping",
        "success",
        1,
    )


def test_failed_test_delivery_reports_the_code(admin_client, endpoint, receiver):
    receiver.expect_request("/hook").respond_with_response(Response("no", status=401))
    data = admin_client.post(f"/api/v1/webhooks/{endpoint[0].id}/test").json()["data"]
    assert (data["response_code"], data["success"]) == (401, False)
    assert WebhookDelivery.objects.get().status == "failed"


def test_manual_retry_of_a_failed_delivery(admin_client, organization, endpoint, receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS = []
    endpoint, secret = endpoint
    bodies = []
    receiver.expect_ordered_request("/hook").respond_with_response(Response("down", status=500))
    receiver.expect_ordered_request("/hook").respond_with_handler(
        lambda request: (
            bodies.append((request.headers["X-Service-Delivery-Id"], verify(request, secret))),
            Response("ok"),
        )[1]
    )
    delivery = _delivery(organization)
    attempt_delivery(delivery.id)

    response = admin_client.post(f"/api/v1/webhooks/{endpoint.id}/deliveries/{delivery.id}/retry")

    assert response.status_code == 200
    assert response.json()["data"] == {
        "delivery_id": delivery.id,
        "status": "sent",
        "response_code": 200,
        "success": True,
        "error": None,
        "attempts": 2,
    }
    assert bodies[0][0] == delivery.id
    delivery.refresh_from_db()
    assert delivery.status == "success"


def test_manual_retry_only_of_failed_deliveries(admin_client, organization, endpoint):
    delivery = _delivery(organization)  # pending
    response = admin_client.post(f"/api/v1/webhooks/{endpoint[0].id}/deliveries/{delivery.id}/retry")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_status_transition"
    assert (
        admin_client.post(f"/api/v1/webhooks/{endpoint[0].id}/deliveries/del_nope/retry").status_code == 404
    )


def test_deliveries_list_limit(admin_client, organization, endpoint):
    for _ in range(3):
        _delivery(organization)
    assert len(admin_client.get(f"/api/v1/webhooks/{endpoint[0].id}/deliveries?limit=2").json()["data"]) == 2
    assert admin_client.get(f"/api/v1/webhooks/{endpoint[0].id}/deliveries?limit=500").status_code == 400


def test_expiring_a_keyed_session_creates_a_checkout_expired_delivery(api_client, organization, endpoint):
    _, raw = make_api_key(organization, permissions=["write"])
    session_id = client_for(raw).post("/checkout-sessions", {}, format="json").json()["data"]["id"]
    api_client.post(f"/checkout-sessions/{session_id}/expire")
    delivery = WebhookDelivery.objects.get()
    assert delivery.event_type == "checkout.expired"
    assert f'"id":"{session_id}"' in delivery.body


def test_a_rolled_back_change_sends_nothing(organization, endpoint, django_capture_on_commit_callbacks):
    from django.db import transaction

    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(RuntimeError), transaction.atomic():
        emit_event(organization=organization, event_type="payment.completed", data=DATA)
        raise RuntimeError("business change failed")
    assert callbacks == []
    assert not WebhookDelivery.objects.exists()


def test_claims_make_a_second_attempt_a_no_op(organization, endpoint, receiver):
    receiver.expect_request("/hook").respond_with_data("ok")
    delivery = _delivery(organization)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() + timedelta(seconds=60)
    )
    assert attempt_delivery(delivery.id) is None
    assert len(receiver.log) == 0


def _attempt_concurrently(chunks: list[list[str]]) -> list:
    """One thread per chunk, each with its own database connection, attempting its deliveries in turn."""
    from django.db import connection

    results: list = []

    def work(chunk):
        try:
            for delivery_id in chunk:
                results.append(attempt_delivery(delivery_id))
        except Exception as exc:
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(chunk,)) for chunk in chunks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.mark.django_db(transaction=True)
def test_counters_are_exact_under_concurrent_workers(organization, receiver, settings):
    """Eight threads (own connections) finish deliveries of one endpoint at once: no increment is lost."""
    settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = 16  # this test is about counters, not the cap
    receiver.expect_request("/hook").respond_with_data("ok")
    endpoint, _ = make_endpoint(organization, receiver.url_for("/hook"))
    for _ in range(16):
        emit_event(organization=organization, event_type="payment.completed", data=DATA)
    ids = list(WebhookDelivery.objects.values_list("pk", flat=True))

    results = _attempt_concurrently([ids[i::8] for i in range(8)])

    assert all(not isinstance(r, Exception) for r in results)
    endpoint.refresh_from_db()
    assert endpoint.success_count == 16
    assert WebhookDelivery.objects.filter(status="success").count() == 16


def test_the_sweep_leaves_test_pings_to_their_request(organization, endpoint):
    from webhooks.delivery import due_delivery_ids

    due = _delivery(organization)
    WebhookDelivery.objects.create(
        endpoint=endpoint[0], event_type="test.ping", is_test=True, body="{}", next_attempt_at=timezone.now()
    )
    assert due_delivery_ids() == [due.id]


@pytest.mark.django_db(transaction=True)
def test_attempts_in_flight_per_endpoint_are_capped(organization, receiver, settings):
    """Four workers at once, cap 2: the receiver never sees more than 2 requests at a time; the rest wait."""
    import time

    settings.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = 2
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def slow(_request):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.5)
        with lock:
            state["now"] -= 1
        return Response("ok")

    receiver.expect_request("/hook").respond_with_handler(slow)
    make_endpoint(organization, receiver.url_for("/hook"))
    for _ in range(4):
        emit_event(organization=organization, event_type="payment.completed", data=DATA)
    ids = list(WebhookDelivery.objects.values_list("pk", flat=True))

    results = _attempt_concurrently([[delivery_id] for delivery_id in ids])

    sent = [r for r in results if r is not None]
    assert state["most"] <= 2
    assert len(sent) == 2 and all(r.succeeded for r in sent)
    waiting = WebhookDelivery.objects.filter(status="pending")
    assert waiting.count() == 2
    # Each attempt that finished handed one waiting delivery its turn, due now (a worker takes it next).
    assert all(d.attempts == 0 and not d.waiting_for_slot for d in waiting)
    assert all(d.next_attempt_at <= timezone.now() for d in waiting)
