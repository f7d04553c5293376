"""A slow, hanging or trickling receiver never delays another endpoint's deliveries."""

import threading
import time

from werkzeug import Response

from core import safehttp
from tests.conftest import wait_for
from tests.webhooks.conftest import make_endpoint
from webhooks.events import emit_event
from webhooks.models import WebhookAttempt, WebhookDelivery

DATA = {"order_id": "ord_1"}


def test_a_trickling_receiver_is_cut_off_at_the_total_deadline(slow_server):
    """A header line every 0.2 s never lets a per-read timeout fire; the deadline covers the whole exchange."""
    server = slow_server("trickle", interval=0.2)
    result = safehttp.post(server.url, b"{}", {}, deadline_seconds=1.0, allow_loopback=True)
    assert (result.status, result.timed_out) == (None, True)
    assert 900 <= result.elapsed_ms < 2000


def test_a_hanging_receiver_is_cut_off_at_the_total_deadline(slow_server):
    server = slow_server("hang")
    result = safehttp.post(server.url, b"{}", {}, deadline_seconds=0.5, allow_loopback=True)
    assert (result.status, result.timed_out) == (None, True)
    assert result.error.startswith("timed out")


def test_one_deadline_thread_cuts_each_exchange_at_its_own_deadline_whatever_the_order(slow_server):
    """The deadlines share one thread: a short deadline set after a long one still fires first."""
    server = slow_server("trickle", interval=0.1)
    results: dict[str, safehttp.PostResult] = {}

    def post(name: str, deadline: float) -> None:
        results[name] = safehttp.post(server.url, b"{}", {}, deadline_seconds=deadline, allow_loopback=True)

    long = threading.Thread(target=post, args=("long", 3.0))
    long.start()
    time.sleep(0.2)  # the long deadline is the one the thread waits for
    post("short", 0.4)
    assert "long" not in results  # the short one was cut off while the long one still waited
    long.join()
    assert results["short"].timed_out and results["long"].timed_out
    assert results["short"].elapsed_ms < results["long"].elapsed_ms


def test_the_deadline_thread_is_started_again_in_a_forked_process(slow_server):
    import multiprocessing

    server = slow_server("trickle", interval=0.1)
    safehttp.post(server.url, b"{}", {}, deadline_seconds=0.2, allow_loopback=True)  # the parent's thread
    answer = multiprocessing.get_context("fork").Queue()

    def child() -> None:
        result = safehttp.post(server.url, b"{}", {}, deadline_seconds=0.3, allow_loopback=True)
        answer.put(result.timed_out)

    process = multiprocessing.get_context("fork").Process(target=child)
    process.start()
    assert answer.get(timeout=20) is True  # cut off in the child too, not trickled to forever
    process.join(timeout=10)


def test_test_ping_to_a_slow_receiver_answers_in_time(admin_client, organization, slow_server, settings):
    settings.WEBHOOK_SYNC_TIMEOUT_SECONDS = 1.5
    for mode in ("hang", "trickle"):
        endpoint, _ = make_endpoint(organization, slow_server(mode).url)
        started = time.monotonic()
        response = admin_client.post(f"/api/v1/webhooks/{endpoint.id}/test")
        took = time.monotonic() - started
        assert response.status_code == 200
        data = response.json()["data"]
        assert (data["success"], data["response_code"]) == (False, None)
        assert data["error"] == "The receiver did not answer within 1.5 seconds."
        assert took < 3


def test_a_healthy_endpoint_is_not_delayed_by_hanging_and_trickling_ones(
    start_worker, organization, receiver, slow_server
):
    """Four receivers that never answer and one that trickles, beside a healthy one, on one real worker."""
    arrivals: list[float] = []
    lock = threading.Lock()

    def healthy(_request):
        with lock:
            arrivals.append(time.monotonic())
        return Response("ok")

    receiver.expect_request("/hook").respond_with_handler(healthy)
    deadline = 6
    start_worker(
        pool="threads",
        concurrency=24,
        WEBHOOK_TIMEOUT_SECONDS=str(deadline),
        WEBHOOK_DELIVERY_LEASE_SECONDS="30",
        WEBHOOK_RETRY_DELAYS="3600",
    )
    healthy_endpoint, _ = make_endpoint(organization, receiver.url_for("/hook"))
    # Warm up: the worker is ready once the healthy endpoint has had one delivery.
    emit_event(organization=organization, event_type="payment.completed", data=DATA)
    wait_for(lambda: len(arrivals) == 1, timeout=60)

    slow = [make_endpoint(organization, slow_server("hang").url)[0] for _ in range(4)]
    slow.append(make_endpoint(organization, slow_server("trickle").url)[0])
    sent_at = []
    for _ in range(3):
        sent_at.append(time.monotonic())
        emit_event(organization=organization, event_type="payment.completed", data=DATA)
        time.sleep(0.1)

    wait_for(lambda: len(arrivals) == 4, timeout=30)
    latencies = [arrival - sent for arrival, sent in zip(arrivals[1:], sent_at, strict=True)]
    assert max(latencies) < 3, latencies

    # Every slow attempt ends by its deadline, as one attempt per delivery: none was handed to a second worker.
    slow_ids = [endpoint.id for endpoint in slow]
    wait_for(
        lambda: (
            WebhookAttempt.objects.filter(
                delivery__endpoint_id__in=slow_ids, finished_at__isnull=False
            ).count()
            == 15
        ),
        timeout=deadline * 3 + 10,
    )
    attempts = WebhookAttempt.objects.filter(delivery__endpoint_id__in=slow_ids)
    assert attempts.count() == 15
    assert {a.number for a in attempts} == {1}
    assert all(a.error.startswith("timed out") for a in attempts)
    assert max(a.response_time_ms for a in attempts) < (deadline + 2) * 1000
    assert WebhookDelivery.objects.filter(endpoint=healthy_endpoint, status="success").count() == 4
