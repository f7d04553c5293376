from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from platform_api import key_cache
from platform_api.models import ApiKey
from tests.conftest import client_for
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


def _error(response):
    return response.status_code, response.json()["error"]["type"], response.json()["error"]["code"]


def test_no_key_is_401_key_missing(api_client):
    assert _error(api_client.get("/api/v1/events")) == (401, "authentication_error", "key_missing")


def test_non_bearer_authorization_without_x_api_key_is_key_missing(api_client):
    response = api_client.get("/api/v1/events", HTTP_AUTHORIZATION="Basic dXNlcjpwYXNz")
    assert _error(response) == (401, "authentication_error", "key_missing")


@pytest.mark.parametrize("raw", ["svc_live_" + "a" * 40, "sk_test_abc", "svc_live_", "x" * 500])
def test_unknown_or_malformed_key_is_401_key_invalid(api_client, raw):
    response = api_client.get("/api/v1/events", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert _error(response) == (401, "authentication_error", "key_invalid")


def test_expired_key_is_401_key_expired(organization):
    _, raw = make_api_key(organization, expires_at=timezone.now() - timedelta(seconds=1))
    assert _error(client_for(raw).get("/api/v1/events")) == (401, "authentication_error", "key_expired")


def test_key_that_expires_later_still_works(organization):
    _, raw = make_api_key(organization, expires_at=timezone.now() + timedelta(hours=1))
    assert client_for(raw).get("/api/v1/events").status_code == 200


def test_revoked_key_is_401_key_revoked_even_with_the_other_header(api_client, organization):
    key, raw = make_api_key(organization)
    ApiKey.objects.filter(pk=key.pk).update(is_active=False)
    assert _error(api_client.get("/api/v1/events", HTTP_X_API_KEY=raw)) == (
        401,
        "authentication_error",
        "key_revoked",
    )


def test_authentication_is_one_query_when_last_used_is_fresh(organization):
    key, raw = make_api_key(organization, permissions=["read"])
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
    client = client_for(raw)

    with CaptureQueriesContext(connection) as queries:
        client.get("/api/v1/api-keys")  # 403: authentication + permission only, no view queries

    key_queries = [q["sql"] for q in queries.captured_queries if "platform_api_apikey" in q["sql"]]
    assert len(key_queries) == 1
    assert "key_digest" in key_queries[0]


def test_last_used_at_is_written_at_most_once_a_minute(organization):
    key, raw = make_api_key(organization, permissions=["read"])
    client = client_for(raw)

    client.get("/api/v1/events")
    key.refresh_from_db()
    first = key.last_used_at
    client.get("/api/v1/events")
    key.refresh_from_db()

    assert first is not None
    assert key.last_used_at == first

    ApiKey.objects.filter(pk=key.pk).update(last_used_at=first - timedelta(minutes=2))
    key.refresh_from_db()
    key_cache.refresh(key)  # a change behind the service's back: its cached record (with Redis) follows
    client.get("/api/v1/events")
    key.refresh_from_db()
    assert key.last_used_at > first


def test_read_key_can_list_events_but_not_write(organization):
    _, raw = make_api_key(organization, permissions=["read"])
    client = client_for(raw)
    assert client.get("/api/v1/events").status_code == 200
    response = client.delete("/api/v1/api-keys/ak_whatever")
    assert response.status_code == 403
    assert "'admin'" in response.json()["error"]["message"]
