"""The web process has no per-request health check: a read that finds its connection dead (PostgreSQL
restarted, an idle connection cut) is run again on a new one; a write is never run twice (issue 46)."""

import psycopg
import pytest
from django.db import close_old_connections, connection
from django.test import Client

from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key
from tests.orders.conftest import order_body

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a server-side disconnect needs PostgreSQL"),
]


@pytest.fixture
def no_health_checks():
    """As in the web process (config/gunicorn_conf.py): no SELECT 1 before a request's first query."""
    connection.settings_dict["CONN_HEALTH_CHECKS"] = False
    yield
    connection.settings_dict["CONN_HEALTH_CHECKS"] = True
    connection.close()  # whatever a test left of it


def _cut_the_connection() -> None:
    """What a PostgreSQL restart does to an idle connection: the server ends its backend."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    params = connection.get_connection_params()
    dsn = {k: params[k] for k in ("dbname", "user", "host", "port") if params.get(k)}
    with psycopg.connect(**dsn, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_a_read_on_a_lost_connection_is_answered_from_a_new_one(no_health_checks, tokens):
    _, raw = make_api_key(OrganizationFactory(), permissions=["admin"])
    client = client_for(raw)
    before = client.get("/api/v1/api-keys")
    assert before.status_code == 200
    created = client.post("/orders", order_body("custom", srcAmount="1000"), format="json")
    assert created.status_code == 200, created.json()
    order_id = created.json()["data"]["id"]

    _cut_the_connection()
    again = client.get("/api/v1/api-keys")  # the platform interface
    assert again.status_code == 200
    assert again.json() == before.json()

    _cut_the_connection()
    order = Client().get(f"/orders/{order_id}")  # the order interface, its fast path (no key)
    assert order.status_code == 200, order.json()
    assert order_id in order.content.decode()


def test_a_write_on_a_lost_connection_is_not_run_twice(no_health_checks, tokens):
    from orders.models import Order

    _, raw = make_api_key(OrganizationFactory(), permissions=["admin"])
    client = client_for(raw)
    client.get("/api/v1/api-keys")

    _cut_the_connection()
    failed = client.post("/orders", order_body("custom", srcAmount="1000"), format="json")
    assert failed.status_code == 500
    assert failed.json()["success"] is False  # the envelope, not a page
    close_old_connections()  # the end of that request (the test client does not send the signal)
    assert Order.objects.count() == 0

    created = client.post(
        "/orders", order_body("custom", srcAmount="1000"), format="json"
    )  # the next request reconnects
    assert created.status_code == 200
    assert Order.objects.count() == 1
