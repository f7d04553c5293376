"""API keys' records in the shared Redis: an authenticated request reads no row for its key, a revoked key
is refused at the very next request, and the database answers whenever Redis cannot."""

from __future__ import annotations

import socket

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from platform_api import key_cache
from platform_api.models import ApiKey
from tests.conftest import client_for
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


def _queries(client, path):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    return response, [q["sql"] for q in captured.captured_queries]


def test_the_second_request_reads_no_row_for_its_key(shared_redis, organization):
    key, raw = make_api_key(organization, permissions=["admin"])
    client = client_for(raw)
    first, first_sql = _queries(client, "/api/v1/api-keys?limit=5")
    second, second_sql = _queries(client, "/api/v1/api-keys?limit=5")
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert len(first_sql) >= 2 and len(second_sql) == 1, [s[:150] for s in second_sql]  # then the page alone
    assert not any("platform_api_organization" in sql for sql in second_sql)  # a filter needs its id only
    assert shared_redis.exists(f"apikey:{key.key_digest}")


def test_a_revoked_key_is_refused_at_the_very_next_request(shared_redis, organization):
    _, admin_raw = make_api_key(organization, permissions=["admin"])
    victim, victim_raw = make_api_key(organization, permissions=["read"])
    victim_client = client_for(victim_raw)
    assert victim_client.get("/api/v1/events").status_code == 200  # its record is in Redis now
    assert client_for(admin_raw).delete(f"/api/v1/api-keys/{victim.pk}").status_code == 200
    refused = victim_client.get("/api/v1/events")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "key_revoked"


def test_a_request_that_read_the_key_before_its_revocation_cannot_write_it_back(shared_redis, organization):
    key, raw = make_api_key(organization, permissions=["read"])
    stale = ApiKey.objects.get(pk=key.pk)  # read while it was active
    ApiKey.objects.filter(pk=key.pk).update(is_active=False)
    key_cache.forget(key)
    key_cache.remember(stale)  # that request's write arrives after the revocation's
    assert key_cache.cached_key(key.key_digest) is None
    assert client_for(raw).get("/api/v1/events").status_code == 401


def test_an_organization_read_through_a_cached_key_loads_once(shared_redis, organization):
    key, _ = make_api_key(organization)
    key_cache.remember(key)
    cached = key_cache.cached_key(key.key_digest)
    assert cached is not None and cached.organization.pk == organization.pk
    with CaptureQueriesContext(connection) as captured:
        assert (cached.organization.slug, cached.organization.name) == (organization.slug, organization.name)
        assert cached.organization.redirect_domains == organization.redirect_domains
    assert len(captured.captured_queries) == 1


def test_an_expired_key_is_refused_from_its_record_too(shared_redis, organization):
    from datetime import timedelta

    from django.utils import timezone

    key, raw = make_api_key(organization, expires_at=timezone.now() + timedelta(hours=1))
    assert client_for(raw).get("/api/v1/events").status_code == 200
    record = shared_redis.get(f"apikey:{key.key_digest}")
    shared_redis.set(
        f"apikey:{key.key_digest}",
        record.replace(
            key.expires_at.isoformat().encode(), (timezone.now() - timedelta(seconds=1)).isoformat().encode()
        ),
    )
    refused = client_for(raw).get("/api/v1/events")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "key_expired"


def test_with_redis_down_keys_and_limits_come_from_the_database(settings, organization):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    _, raw = make_api_key(organization, permissions=["read"])
    response = client_for(raw).get("/api/v1/events")
    assert response.status_code == 200 and response["X-RateLimit-Remaining"].isdigit()


def test_each_request_is_counted_once_whether_its_record_was_in_redis_or_not(
    shared_redis, organization, settings
):
    settings.PLATFORM_RATE_LIMIT_PER_MINUTE = 4
    _, raw = make_api_key(organization, permissions=["read"])
    client = client_for(raw)
    answers = [client.get("/api/v1/events") for _ in range(5)]  # the first from the database, then Redis
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 429]
    assert [a["X-RateLimit-Remaining"] for a in answers[:4]] == ["3", "2", "1", "0"]
    assert answers[4].json()["error"]["type"] == "rate_limit_error"


def test_a_record_that_does_not_parse_is_read_from_the_database(shared_redis, organization):
    key, raw = make_api_key(organization, permissions=["read"])
    shared_redis.set(f"apikey:{key.key_digest}", b"{not json")
    assert client_for(raw).get("/api/v1/events").status_code == 200
