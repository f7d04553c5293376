import threading

import pytest
from django.conf import settings
from django.db import connection

from platform_api import ratelimit
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch):
    """Keep every request of a test in one window, wherever the wall clock is in its minute."""
    monkeypatch.setattr(ratelimit, "_clock", lambda: 1_800_000_017.0)


QUICK_PAY = {
    "amount": "1000000",
    "token_address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    "chain_id": 8453,
    "recipient_address": "0x1111111111111111111111111111111111111111",
}


def test_platform_allows_120_requests_a_minute_per_key_then_429(organization, admin_key):
    client = client_for(admin_key[1])
    statuses = [
        client.get("/api/v1/events").status_code for _ in range(settings.PLATFORM_RATE_LIMIT_PER_MINUTE)
    ]
    assert settings.PLATFORM_RATE_LIMIT_PER_MINUTE == 120
    assert set(statuses) == {200}

    response = client.get("/api/v1/events")

    assert response.status_code == 429
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("rate_limit_error", "rate_limit_exceeded")
    retry_after = int(response["Retry-After"])
    assert retry_after == 60  # every request was at the same (frozen) instant: the oldest leaves in 60 s
    assert f"Retry after {retry_after} seconds" in error["message"]
    assert (
        response["X-RateLimit-Limit"],
        response["X-RateLimit-Remaining"],
        response["X-RateLimit-Reset"],
    ) == (
        "120",
        "0",
        "60",
    )

    # Another key of the same organization has its own budget.
    _, other = make_api_key(organization, permissions=["read"])
    assert client_for(other).get("/api/v1/events").status_code == 200


def test_quick_pay_allows_5_a_minute_per_ip_then_429(api_client, tokens):
    assert settings.QUICK_PAY_RATE_LIMIT_PER_MINUTE == 5
    statuses = [
        api_client.post("/api/v1/quick-pay", QUICK_PAY, format="json", REMOTE_ADDR="203.0.113.9").status_code
        for _ in range(5)
    ]
    assert statuses == [201] * 5

    response = api_client.post("/api/v1/quick-pay", QUICK_PAY, format="json", REMOTE_ADDR="203.0.113.9")

    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    assert "Retry-After" in response
    other_ip = api_client.post("/api/v1/quick-pay", QUICK_PAY, format="json", REMOTE_ADDR="203.0.113.10")
    assert other_ip.status_code == 201


def test_forwarded_for_is_ignored_without_trusted_proxies(api_client):
    for i in range(5):
        api_client.post(
            "/api/v1/quick-pay",
            QUICK_PAY,
            format="json",
            REMOTE_ADDR="203.0.113.20",
            HTTP_X_FORWARDED_FOR=f"10.0.0.{i}",
        )
    response = api_client.post(
        "/api/v1/quick-pay",
        QUICK_PAY,
        format="json",
        REMOTE_ADDR="203.0.113.20",
        HTTP_X_FORWARDED_FOR="10.0.0.99",
    )
    assert response.status_code == 429


def test_trusted_proxy_hop_is_the_client_ip(api_client, settings, tokens):
    settings.TRUSTED_PROXY_COUNT = 1
    for _ in range(5):
        api_client.post(
            "/api/v1/quick-pay",
            QUICK_PAY,
            format="json",
            REMOTE_ADDR="10.0.0.1",
            HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.1",
        )
    # The payer spoofed the left-most entry; the proxy appended the real address, which is limited.
    blocked = api_client.post(
        "/api/v1/quick-pay",
        QUICK_PAY,
        format="json",
        REMOTE_ADDR="10.0.0.1",
        HTTP_X_FORWARDED_FOR="9.9.9.9, 198.51.100.1",
    )
    other = api_client.post(
        "/api/v1/quick-pay",
        QUICK_PAY,
        format="json",
        REMOTE_ADDR="10.0.0.1",
        HTTP_X_FORWARDED_FOR="198.51.100.2",
    )
    assert blocked.status_code == 429
    assert other.status_code == 201


def test_the_window_slides():
    assert ratelimit.hit("test:window", 1, now=600.0).allowed is True
    refused = ratelimit.hit("test:window", 1, now=659.5)
    assert (refused.allowed, refused.retry_after) == (False, 1)
    later = ratelimit.hit("test:window", 1, now=660.0)  # the first request left the window
    assert (later.allowed, later.remaining) == (True, 0)
    assert later.retry_after == 60


def test_a_clock_minute_boundary_does_not_double_the_limit():
    """220 requests in 6 s across a minute boundary, limit 110: fixed windows let all through."""
    times = [1_799_999_997.0 + i * 6 / 220 for i in range(220)]
    allowed = [t for t in times if ratelimit.hit("test:boundary", 110, now=t).allowed]
    assert len(allowed) == 110


def test_no_60_second_interval_holds_more_than_the_limit():
    import random

    rng = random.Random(7)
    times = sorted(1_000_000.0 + rng.uniform(0, 300) for _ in range(1500))
    allowed = [t for t in times if ratelimit.hit("test:sliding", 50, now=t).allowed]
    assert len(allowed) >= 250  # the limit is reached, not undershot
    for index, start in enumerate(allowed):
        within = [t for t in allowed[index:] if t < start + 60]
        assert len(within) <= 50


def test_every_platform_response_carries_the_rate_limit_headers(admin_client, api_client, tokens):
    first = admin_client.get("/api/v1/api-keys")
    second = admin_client.get("/api/v1/webhooks")
    assert (first["X-RateLimit-Limit"], first["X-RateLimit-Remaining"]) == ("120", "119")
    assert second["X-RateLimit-Remaining"] == "118"
    assert first["X-RateLimit-Reset"] == "0"
    invalid = admin_client.post("/api/v1/api-keys", {"name": ""}, format="json")
    assert (invalid.status_code, invalid["X-RateLimit-Remaining"]) == (400, "117")
    quick = api_client.post("/api/v1/quick-pay", QUICK_PAY, format="json", REMOTE_ADDR="203.0.113.50")
    assert (quick.status_code, quick["X-RateLimit-Limit"], quick["X-RateLimit-Remaining"]) == (201, "5", "4")


def test_failed_authentications_are_limited_per_client_ip(organization, admin_key, settings, api_client):
    """Past the budget a wrong key gets 429 from that address; valid keys and keyless requests from the same
    address (every merchant behind one proxy) are never refused for it, and other addresses are untouched."""
    settings.AUTH_FAILURE_RATE_LIMIT_PER_MINUTE = 20
    guesser = client_for("svc_live_" + "x" * 40)
    statuses = [guesser.get("/api/v1/api-keys", REMOTE_ADDR="198.51.100.7").status_code for _ in range(20)]
    assert statuses == [401] * 20
    blocked = guesser.get("/api/v1/api-keys", REMOTE_ADDR="198.51.100.7")
    assert blocked.status_code == 429
    assert blocked.json()["error"]["code"] == "rate_limit_exceeded"
    assert "failed authentications" in blocked.json()["error"]["message"]
    assert blocked["X-RateLimit-Remaining"] == "0" and int(blocked["Retry-After"]) > 0
    # The order interface shares the budget for wrong keys ...
    assert guesser.get("/orders?creatorAddress=0x" + "1" * 40, REMOTE_ADDR="198.51.100.7").status_code == 429
    # ... but a valid key from the same address, of this or another organization, is served ...
    real = client_for(admin_key[1])
    assert real.get("/api/v1/api-keys", REMOTE_ADDR="198.51.100.7").status_code == 200
    other = client_for(make_api_key(OrganizationFactory(slug="other"), permissions=["read"])[1])
    assert other.get("/api/v1/events", REMOTE_ADDR="198.51.100.7").status_code == 200
    assert real.get("/orders?creatorAddress=0x" + "1" * 40, REMOTE_ADDR="198.51.100.7").status_code == 200
    # ... so is the order interface without a key ...
    assert (
        api_client.get("/orders?creatorAddress=0x" + "1" * 40, REMOTE_ADDR="198.51.100.7").status_code == 200
    )
    # ... and wrong keys from other addresses are judged on their own.
    assert guesser.get("/api/v1/api-keys", REMOTE_ADDR="198.51.100.8").status_code == 401


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["database", "redis"])
def test_counter_is_atomic_under_concurrency(backend, settings):
    """Eight threads, each with its own connection, count 25 hits each: none is lost."""
    if backend == "redis" and not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not configured")
    if backend == "database":
        settings.REDIS_URL = ""
    errors = []

    def worker():
        try:
            for _ in range(25):
                ratelimit.hit("test:concurrency", 10_000, now=1_200.0)
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert ratelimit.hit("test:concurrency", 10_000, now=1_200.0).count == 201


def test_purge_removes_only_ended_database_buckets(settings):
    settings.REDIS_URL = ""  # Redis expires its own buckets; the database needs purging
    ratelimit.hit("test:purge-old", 5, now=0.0)
    ratelimit.hit("test:purge-new", 5, now=1_000.0)
    assert ratelimit.purge_expired_windows(now=1_010.0) == 1
    assert ratelimit.hit("test:purge-new", 5, now=1_010.0).count == 2
