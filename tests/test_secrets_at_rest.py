"""No secret shown once (API keys, webhook secrets) is stored or logged in plaintext anywhere."""

import logging

import pytest
from django.conf import settings
from django.db import connection

pytestmark = pytest.mark.django_db


def _database_dump() -> str:
    """Every row of every table, as text: what a leaked backup would show."""
    chunks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608 - our own tables
            chunks.extend(repr(row) for row in cursor.fetchall())
    return "\n".join(chunks)


def _cache_dump() -> str:
    if not settings.REDIS_URL:
        return ""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    return "\n".join(repr(client.dump(key)) + repr(key) for key in client.scan_iter("*"))


def _create_key_and_endpoint(client):
    """An API key and a webhook endpoint, each created with an Idempotency-Key (the same ones each call)."""
    key = client.post(
        "/api/v1/api-keys", {"name": "ci", "permissions": ["read"]}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    hook = client.post(
        "/api/v1/webhooks",
        {"url": "https://93.184.216.34/x", "events": ["*"]},
        format="json",
        HTTP_IDEMPOTENCY_KEY="w-1",
    )
    return key, hook


def test_secrets_created_with_an_idempotency_key_are_never_stored_or_logged(admin_client, caplog):
    caplog.set_level(logging.DEBUG)
    key, hook = _create_key_and_endpoint(admin_client)
    assert (key.status_code, hook.status_code) == (201, 201)
    raw_key, secret = key.json()["key"], hook.json()["data"]["secret"]
    assert raw_key.startswith("svc_live_") and secret.startswith("whsec_")

    stored = _database_dump() + _cache_dump()
    logged = caplog.text
    for value in (raw_key, secret, raw_key[len("svc_live_") :], secret[len("whsec_") :]):
        assert value not in stored
        assert value not in logged

    # A replay still returns the first response, secret included.
    replay_key, replay_hook = _create_key_and_endpoint(admin_client)
    assert replay_key["Idempotent-Replayed"] == replay_hook["Idempotent-Replayed"] == "true"
    assert (replay_key.json()["key"], replay_hook.json()["data"]["secret"]) == (raw_key, secret)


def test_a_stored_response_cannot_be_read_under_another_purpose():
    from core.crypto import decrypt, encrypt

    token = encrypt(b"svc_live_x", purpose="idempotency")
    assert decrypt(token, purpose="idempotency") == b"svc_live_x"
    with pytest.raises(ValueError):
        decrypt(token, purpose="other")
