"""The load balancer's probes: /healthz says the process answers, /readyz that it can serve."""

import pytest
from django.test import Client


@pytest.fixture
def client():
    return Client(enforce_csrf_checks=True)  # as a real client meets the server


def test_liveness_touches_nothing(client):
    answer = client.get("/healthz")  # without the db fixture: a query would raise
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}
    assert "no-cache" in answer["Cache-Control"]


def test_readiness_asks_the_database_and_redis(db, client, shared_redis):
    answer = client.get("/readyz")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "checks": {"database": "ok", "redis": "ok"}}


def test_a_node_whose_redis_is_gone_is_not_ready(db, client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json() == {"status": "unavailable", "checks": {"database": "ok", "redis": "unavailable"}}


def test_a_node_whose_database_is_gone_is_not_ready(client, settings, monkeypatch):
    from django.db import OperationalError

    class Gone:
        def cursor(self):
            raise OperationalError("connection refused")

    settings.REDIS_URL = ""
    monkeypatch.setattr("config.health.connection", Gone())
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json() == {"status": "unavailable", "checks": {"database": "unavailable"}}


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_a_probe_is_read_only(client, path):
    answer = client.post(path)
    assert answer.status_code == 405
    assert answer["Allow"] == "GET, HEAD"
    assert answer.json()["status"] == "method not allowed"
