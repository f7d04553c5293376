"""Hostile input answers 4xx in its interface's envelope, never 500, and is logged without a traceback.

The write operations are read from the OpenAPI schema, so every POST and PATCH
of both interfaces, present and future, is covered.
"""

import json
import logging
import re

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.conftest import client_for
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


def _write_operations() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = []
    for path, item in schema["paths"].items():
        for method in ("post", "patch"):
            if method in item:
                concrete = re.sub(r"\{[^}]+\}", "wh_x", path) if path.startswith("/api/v1/") else path
                concrete = re.sub(r"\{[^}]+\}", "6f1c1a70-0000-4000-8000-000000000000", concrete)
                operations.append((method, concrete))
    return operations


OPERATIONS = _write_operations()


def _deep(depth: int) -> str:
    return '{"metadata":' + "[" * depth + "]" * depth + "}"


HOSTILE_BODIES = {
    "nested 5,000 deep": _deep(5000),
    "nested 40 deep": _deep(40),
    "NUL in a value": '{"metadata": {"note": "a\\u0000b"}, "name": "x\\u0000"}',
    "NUL in a key": '{"metadata": {"a\\u0000b": 1}}',
    "lone surrogate in a value": '{"metadata": {"note": "\\ud800"}, "name": "\\udfff"}',
    "lone surrogate in a key": '{"metadata": {"\\ud800": 1}}',
    "NaN": '{"amount": NaN}',
    "invalid UTF-8": b'{"name": "\xff\xfe"}',
    "5,000-digit number": '{"chain_id": ' + "9" * 5000 + "}",
}


def _client(path):
    if path.startswith("/api/v1/"):
        return client_for(make_api_key(_organization(), permissions=["admin"], name="t")[1])
    from rest_framework.test import APIClient

    return APIClient()


def _organization():
    from platform_api.models import Organization
    from tests.factories import OrganizationFactory

    return Organization.objects.first() or OrganizationFactory(slug="acme")


def _row_counts() -> dict[str, int]:
    from django.apps import apps

    return {
        model._meta.label: model.objects.count()
        for model in apps.get_models()
        if model._meta.app_label in ("platform_api", "orders", "webhooks", "audit", "onramp")
        and model._meta.label != "platform_api.RateLimitBucket"  # counting the request is the point of it
    }


def _assert_envelope(path, response):
    body = response.json()
    if path.startswith("/api/v1/"):
        assert set(body["error"]) >= {"type", "code", "message"}
    else:
        assert body["success"] is False and body["statusCode"] == response.status_code


def test_the_schema_lists_the_write_operations():
    paths = {path for _, path in OPERATIONS}
    assert {
        "/orders",
        "/checkout-sessions",
        "/api/v1/api-keys",
        "/api/v1/quick-pay",
        "/api/v1/webhooks",
    } <= paths


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
@pytest.mark.parametrize("kind", list(HOSTILE_BODIES))
def test_hostile_bodies_are_4xx_in_the_envelope(method, path, kind, caplog):
    body = HOSTILE_BODIES[kind]
    client = _client(path)
    before = _row_counts()
    response = getattr(client, method)(path, data=body, content_type="application/json")
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert _row_counts() == before  # nothing was written
    _assert_envelope(path, response)
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_a_body_over_the_limit_is_413(method, path, settings):
    body = json.dumps({"metadata": {"blob": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)}})
    response = getattr(_client(path), method)(path, data=body, content_type="application/json")
    assert response.status_code == 413
    _assert_envelope(path, response)


def test_a_3_mb_body_is_413_with_the_default_limit(admin_client):
    body = json.dumps({"name": "x" * 3_000_000, "permissions": ["read"]})
    response = admin_client.post("/api/v1/api-keys", data=body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"


def test_the_offending_field_is_named(admin_client, api_client):
    response = admin_client.post(
        "/api/v1/webhooks",
        data='{"url": "https://93.184.216.34/x", "events": ["*"], "description": "a\\u0000"}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "description"
    response = api_client.post(
        "/checkout-sessions", data='{"metadata": {"x": ["ok", "\\ud800"]}}', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("metadata.x[1]:")


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/chains/%C2%B2/tokens", 400),  # a digit, but not an ASCII one: not a chain id
        ("/chains/" + "9" * 5000 + "/tokens", 400),
        ("/chains/0/tokens", 400),
        ("/chains/8453/tokens?term=a%00b", 400),
        ("/orders?creatorAddress=%00", 400),
        ("/orders?limit=" + "9" * 5000, 400),
        ("/orders/%00", 400),
        ("/checkout-sessions/%00", 400),
    ],
)
def test_hostile_paths_and_queries_on_the_order_interface(api_client, path, status, caplog):
    response = api_client.get(path)
    assert response.status_code == status
    _assert_envelope(path, response)
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    ("path", "status", "param"),
    [
        ("/api/v1/events?type=a%00b", 400, "type"),
        ("/api/v1/events?resource_type=%01", 400, "resource_type"),
        ("/api/v1/events?page=99999999999999999999", 400, "page"),
        ("/api/v1/events?page=%C2%B2", 400, "page"),
        ("/api/v1/events?limit=" + "9" * 5000, 400, "limit"),
        ("/api/v1/webhooks/wh_%00", 404, None),
        ("/api/v1/webhooks/wh_%00/deliveries", 404, None),
        ("/api/v1/api-keys/%ED%A0%80", 404, None),
    ],
)
def test_hostile_paths_and_queries_on_the_platform(admin_client, path, status, param, caplog):
    response = admin_client.get(path)
    assert response.status_code == status
    _assert_envelope(path, response)
    assert response.json()["error"].get("param") == param
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/api-keys/%C2%84",
        "/api/v1/nope",
        "/nope",
        "/api/v1/webhooks/%0A8",
        "/a%0Ab",
    ],
)
def test_writes_to_unknown_paths_are_json_404_not_a_csrf_page(method, path):
    """Without a CSRF token (API clients never send one), unknown paths still answer 404 in the envelope."""
    from django.test import Client

    response = getattr(Client(enforce_csrf_checks=True), method)(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_writes_to_a_read_only_path_are_json_405_not_a_csrf_page(method):
    from django.test import Client

    response = getattr(Client(enforce_csrf_checks=True), method)("/chains/x/tokens")
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD, OPTIONS"
    assert response["Content-Type"] == "application/json" and response.json()["success"] is False
