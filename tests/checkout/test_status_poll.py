"""The hosted page's status poll: answered 304 from one Redis read while nothing it shows changed, and from
the database again after every change, on its commit; without a Redis, always from the database."""

from __future__ import annotations

import re
import socket
import threading

import pytest
from django.db import connection, transaction
from django.test import Client

from checkout.sessions import session_expire
from checkout.status_version import status_version
from orders.lifecycle import WAITING, order_fail, order_record_deposit, order_transition
from orders.models import Order
from tests.factories import SessionOrderFactory, tx_hash
from tests.orders.conftest import USDC_BASE, poster_link

pytestmark = pytest.mark.django_db


def _poll(client: Client, session_id: str, etag: str | None = None):
    headers = {"HTTP_IF_NONE_MATCH": etag} if etag else {}
    return client.get(f"/pay/s/{session_id}/status", **headers)


def test_an_unchanged_session_is_answered_304_without_the_database(shared_redis, django_assert_num_queries):
    link = SessionOrderFactory()
    client = Client()
    first = _poll(client, link.session_id)
    assert first.status_code == 200 and first.json()["order"]["status"] == Order.Status.SCANNING_DEPOSIT
    assert first["Cache-Control"] == "no-cache, private"
    etag = first["ETag"]
    with django_assert_num_queries(0):
        again = _poll(client, link.session_id, etag)
    assert again.status_code == 304 and again["ETag"] == etag and again.content == b""
    # Another client (no ETag, or a stale one) reads the same state from the database.
    assert _poll(Client(), link.session_id, '"stale"').json() == first.json()


def _transition(order):
    order_transition(order, from_statuses=WAITING, to_status=Order.Status.EXPIRED, reason="test")


def _deposit(order):
    order_record_deposit(
        order=order,
        chain=order.src_chain,
        tx_hash=tx_hash(7),
        amount=int(order.src_amount) // 2,
        from_address=None,
    )


def _failure(order):
    order_fail(order=order, error="test")


@pytest.mark.parametrize("change", [_transition, _deposit, _failure])
def test_every_change_the_poll_shows_gives_a_new_answer_once_committed(
    shared_redis, django_capture_on_commit_callbacks, change
):
    link = SessionOrderFactory()
    client = Client()
    before = _poll(client, link.session_id)
    with django_capture_on_commit_callbacks(execute=False) as pending:
        change(Order.objects.get(pk=link.order_id))
    # Not committed yet: the version is the one before, so a poll cannot cache what might roll back.
    assert _poll(client, link.session_id, before["ETag"]).status_code == 304
    for callback in pending:
        callback()
    after = _poll(client, link.session_id, before["ETag"])
    assert after.status_code == 200 and after["ETag"] != before["ETag"]
    assert after.json() != before.json()
    # A poll without an ETag (another tab) gets the new state too, not the body kept for the old version.
    assert _poll(Client(), link.session_id).json() == after.json()


def test_a_session_that_expires_gives_a_new_answer(shared_redis, django_capture_on_commit_callbacks):
    link = SessionOrderFactory()
    client = Client()
    before = _poll(client, link.session_id)
    with django_capture_on_commit_callbacks(execute=True):
        session_expire(session_id=link.session_id, reason="test")
    after = _poll(client, link.session_id, before["ETag"])
    assert after.status_code == 200 and after.json()["session"]["status"] == "expired"


def test_a_change_that_rolls_back_keeps_the_answer(shared_redis, django_capture_on_commit_callbacks):
    link = SessionOrderFactory()
    client = Client()
    before = _poll(client, link.session_id)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        _transition(Order.objects.get(pk=link.order_id))
        raise RuntimeError("rolled back")
    assert _poll(client, link.session_id, before["ETag"]).status_code == 304
    assert Order.objects.get(pk=link.order_id).status == Order.Status.SCANNING_DEPOSIT


def test_an_unknown_session_is_404_and_leaves_no_version(shared_redis):
    missing = "cs_" + "0" * 24
    response = _poll(Client(), missing)
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert shared_redis.exists(f"checkout:status:{missing}") == 0
    assert Client().get(f"/pay/s/{missing}").status_code == 404
    assert list(shared_redis.scan_iter(f"checkout:status:{missing}*")) == []


def test_without_a_redis_every_poll_reads_the_database(settings, django_assert_num_queries):
    settings.REDIS_URL = ""
    link = SessionOrderFactory()
    response = _poll(Client(), link.session_id)
    assert response.status_code == 200 and not response.has_header("ETag")
    assert status_version(link.session_id) is None


def test_a_redis_that_is_down_only_costs_the_cache(settings):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    link = SessionOrderFactory()
    response = _poll(Client(), link.session_id, '"anything"')
    assert response.status_code == 200 and not response.has_header("ETag")
    assert response.json()["session"]["id"] == link.session_id


def test_a_devnet_payment_for_an_unknown_session_is_a_404_not_an_error():
    response = Client().post("/pay/s/cs_" + "1" * 24 + "/devnet-pay")
    assert response.status_code == 404 and response.json()["statusCode"] == 404


def _wsgi(app, path: str, *, etag: str | None = None, method: str = "GET"):
    from wsgiref.util import setup_testing_defaults

    environ: dict = {}
    setup_testing_defaults(environ)
    environ.update(PATH_INFO=path, REQUEST_METHOD=method, HTTP_HOST="testserver")
    if etag:
        environ["HTTP_IF_NONE_MATCH"] = etag
    answered: list = []
    body = b"".join(app(environ, lambda status, headers, *_: answered.append((status, dict(headers)))))
    return answered[0][0], answered[0][1], body


def test_the_deployed_application_answers_an_unchanged_poll_before_django(shared_redis):
    from prometheus_client import REGISTRY

    from checkout.status_fastpath import StatusNotModified
    from config.wsgi import application  # what gunicorn serves

    def counted(status: str) -> float:
        labels = {"route": "pay-status", "method": "GET", "status": status}
        return REGISTRY.get_sample_value("checkout_http_requests_total", labels) or 0.0

    link = SessionOrderFactory()
    by_django = counted("200")
    etag = _poll(Client(), link.session_id)["ETag"]
    assert counted("200") == by_django + 1
    before = counted("304")
    status, headers, body = _wsgi(application, f"/pay/s/{link.session_id}/status", etag=etag)
    assert status.startswith("304") and headers["ETag"] == etag and body == b""
    assert re.fullmatch(r"req_[0-9a-f]{24}", headers["X-Request-ID"])
    assert counted("304") == before + 1  # under the route's name, as Django's middleware counts it

    reached: list[str] = []

    def django(environ, start_response):
        reached.append(environ["PATH_INFO"])
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]

    fast = StatusNotModified(django)
    assert _wsgi(fast, f"/pay/s/{link.session_id}/status", etag=etag)[0].startswith("304")
    for path, tag, method in (
        (f"/pay/s/{link.session_id}/status", '"stale"', "GET"),  # not the current version
        (f"/pay/s/{link.session_id}/status", None, "GET"),  # a first poll
        (f"/pay/s/{link.session_id}/status", etag, "POST"),
        (f"/pay/s/{link.session_id}", etag, "GET"),  # the page itself
        ("/pay/s/cs_" + "9" * 24 + "/status", etag, "GET"),  # another session's id with this version
    ):
        assert _wsgi(fast, path, etag=tag, method=method)[0] == "200 OK", (path, tag, method)
    assert len(reached) == 5


def test_a_poll_without_an_etag_is_answered_from_the_body_kept_for_the_version(
    shared_redis, django_assert_num_queries
):
    link = SessionOrderFactory()
    first = _poll(Client(), link.session_id)
    with django_assert_num_queries(0):
        again = _poll(Client(), link.session_id)
    assert again.status_code == 200 and again.json() == first.json() and again["ETag"] == first["ETag"]
    assert again["Content-Type"] == "application/json"


RECEIVED_IN_PAGE = re.compile(r'order\.received !== "(\d+)"')  # the page's script compares the poll's to it


def _page(client: Client, session_id: str, **query) -> str:
    response = client.get(f"/pay/s/{session_id}", query)
    assert response.status_code == 200
    return response.content.decode()


def _without_request_parts(page: str) -> str:
    """The page less what differs per request: its nonce, CSRF token and time."""
    page = re.sub(r'nonce="[^"]+"', 'nonce=""', page)
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
    return re.sub(r'data-now="\d+"', 'data-now=""', page)


def test_the_deposit_page_is_kept_per_version_and_language_and_follows_each_change(
    shared_redis, django_assert_num_queries, django_capture_on_commit_callbacks
):
    link = SessionOrderFactory()
    order = Order.objects.get(pk=link.order_id)
    payer = Client()
    first = _page(payer, link.session_id)
    assert order.global_address in first and "<svg" in first
    with django_assert_num_queries(0):
        again = _page(Client(), link.session_id)
    assert _without_request_parts(again) == _without_request_parts(first)
    assert re.search(r'nonce="([^"]+)"', again).group(1) != re.search(r'nonce="([^"]+)"', first).group(1)
    assert int(re.search(r'data-now="(\d+)"', again).group(1)) >= int(
        re.search(r'data-now="(\d+)"', first).group(1)
    )
    # Another language is its own page; the language switch keeps no other parameter.
    spanish = _page(Client(), link.session_id, lang="es")
    assert 'lang="es"' in spanish and spanish != again
    # A change committed shows at the next view, from any client.
    with django_capture_on_commit_callbacks(execute=True):
        _deposit(order)
    after = _page(Client(), link.session_id)
    assert _without_request_parts(after) != _without_request_parts(first)
    assert int(RECEIVED_IN_PAGE.search(after).group(1)) == int(order.src_amount) // 2  # what arrived
    assert int(RECEIVED_IN_PAGE.search(first).group(1)) == 0


def test_writers_never_leave_a_kept_answer_older_than_their_commit(shared_redis, transactional_db):
    """Readers keep polling and opening the page while two writers record deposits: right after each commit,
    the writer reads what it committed, never a body or page kept for an earlier version."""
    link = SessionOrderFactory()
    order_id, session_id = link.order_id, link.session_id
    src_amount = int(Order.objects.get(pk=order_id).src_amount)
    stop = threading.Event()
    failures: list[str] = []
    committed = [0]
    lock = threading.Lock()

    def reader():
        try:
            client = Client()
            while not stop.is_set():
                _poll(client, session_id)
                client.get(f"/pay/s/{session_id}")
        finally:
            connection.close()

    def writer(n: int):
        try:
            client = Client()
            for i in range(6):
                with transaction.atomic():
                    order = Order.objects.select_for_update().get(pk=order_id)
                    order_record_deposit(
                        order=order,
                        chain=order.src_chain,
                        tx_hash=tx_hash(1000 * n + i),
                        amount=1,
                        from_address=None,
                    )
                with lock:
                    committed[0] += 1
                    least = committed[0]
                # Every commit counted so far happened before this read (each is counted after it commits).
                received = int(_poll(client, session_id).json()["order"]["received"])
                if received < least:
                    failures.append(f"poll: {received} after {least} commits")
                page = client.get(f"/pay/s/{session_id}").content.decode()
                shown = int(RECEIVED_IN_PAGE.search(page).group(1))
                if shown < least:
                    failures.append(f"page: {shown} after {least} commits")
        finally:
            connection.close()

    readers = [threading.Thread(target=reader) for _ in range(3)]
    writers = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert failures == []
    assert int(_poll(Client(), session_id).json()["order"]["received"]) == 12 < src_amount


def test_the_deposit_page_a_checkout_renders_is_the_one_the_database_gives_and_is_served_without_it(
    shared_redis, admin_client, tokens, django_assert_num_queries, django_capture_on_commit_callbacks
):
    link = poster_link(
        admin_client,
        items=[{"name": "Poster", "amount": "4000000", "quantity": 1}],
        shipping_options=[{"id": "post", "name": "Post", "amount": "1000000"}],
    )
    payer = Client()
    with django_capture_on_commit_callbacks(execute=True):  # the checkout's commit sets the version
        started = payer.post(
            f"/pay/{link['short_code']}", {"pay_with": f"8453:{USDC_BASE}", "shipping_option": "post"}
        )
    assert started.status_code == 302
    session_id = started["Location"].rsplit("/", 1)[1]
    with django_assert_num_queries(0):  # rendered by the checkout itself, once
        kept = _page(payer, session_id)
    assert Order.objects.get(session_order__session_id=session_id).global_address in kept
    for key in shared_redis.scan_iter(f"checkout:status:{session_id}:*"):
        shared_redis.delete(key)  # what is kept goes: the page is rendered from the database again
    assert _without_request_parts(_page(payer, session_id)) == _without_request_parts(kept)
