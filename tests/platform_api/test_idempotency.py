from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from platform_api import serializers as platform_serializers
from platform_api.idempotency import request_digest
from platform_api.models import ApiKey, IdempotencyRecord
from quickpay.models import QuickPayment
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key

pytestmark = pytest.mark.django_db

BODY = {"name": "ci", "permissions": ["read"]}


def _create(client, body=BODY, key="idem-1"):
    return client.post("/api/v1/api-keys", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_replay_returns_the_first_response_and_writes_once(admin_client):
    first = _create(admin_client)
    replay = _create(admin_client)

    assert first.status_code == replay.status_code == 201
    assert replay.json() == first.json()
    assert replay["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert ApiKey.objects.filter(name="ci").count() == 1
    assert AuditEvent.objects.filter(event_type="api_key.created").count() == 1


def test_same_key_with_a_different_body_is_409_and_writes_nothing(admin_client):
    _create(admin_client)

    response = _create(admin_client, {"name": "other", "permissions": ["read"]})

    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("idempotency_error", "idempotency_conflict")
    assert not ApiKey.objects.filter(name="other").exists()


def test_key_order_and_whitespace_do_not_make_a_different_body(admin_client):
    _create(admin_client)
    response = admin_client.post(
        "/api/v1/api-keys",
        data='{ "permissions": ["read"],   "name": "ci" }',
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="idem-1",
    )
    assert response.status_code == 201
    assert response["Idempotent-Replayed"] == "true"


def test_request_still_in_progress_is_409(admin_client, organization):
    IdempotencyRecord.objects.create(
        scope=f"org:{organization.pk}",
        key="busy",
        method="POST",
        path="/api/v1/api-keys",
        request_digest=request_digest("POST", "/api/v1/api-keys", BODY),
    )
    response = _create(admin_client, key="busy")
    assert response.status_code == 409
    assert "in progress" in response.json()["error"]["message"]
    assert not ApiKey.objects.filter(name="ci").exists()


def test_abandoned_claim_is_taken_over(admin_client, organization):
    IdempotencyRecord.objects.create(
        scope=f"org:{organization.pk}",
        key="crashed",
        method="POST",
        path="/api/v1/api-keys",
        request_digest="x",
        created_at=timezone.now() - timedelta(minutes=5),
    )
    assert _create(admin_client, key="crashed").status_code == 201


def test_keys_expire_after_24_hours(admin_client):
    _create(admin_client)
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))

    response = _create(admin_client, {"name": "fresh", "permissions": ["read"]})

    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response


def test_keys_are_scoped_per_organization(admin_client):
    _, other_raw = make_api_key(OrganizationFactory(slug="other"))
    _create(admin_client)
    response = _create(client_for(other_raw))
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response


def test_validation_errors_are_replayed_too(admin_client):
    first = _create(admin_client, {"permissions": ["read"]})
    second = _create(admin_client, {"permissions": ["read"]})
    assert first.status_code == second.status_code == 400
    assert second["Idempotent-Replayed"] == "true"


def test_server_error_rolls_back_the_write_and_releases_the_key(admin_client, monkeypatch):
    def broken_representation(self, instance):
        raise RuntimeError("rendering failed after the write")

    monkeypatch.setattr(
        platform_serializers.ApiKeyCreatedSerializer, "to_representation", broken_representation
    )
    failed = _create(admin_client)
    assert failed.status_code == 500
    assert not ApiKey.objects.filter(name="ci").exists()
    assert not AuditEvent.objects.exists()
    assert not IdempotencyRecord.objects.exists()

    monkeypatch.undo()
    retried = _create(admin_client)
    assert retried.status_code == 201
    assert ApiKey.objects.filter(name="ci").count() == 1


def test_overlong_key_is_400_naming_the_header(admin_client):
    response = _create(admin_client, key="k" * 256)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "Idempotency-Key"
    assert not ApiKey.objects.filter(name="ci").exists()


def test_get_ignores_the_header(admin_client):
    response = admin_client.get("/api/v1/api-keys", HTTP_IDEMPOTENCY_KEY="whatever")
    assert response.status_code == 200
    assert not IdempotencyRecord.objects.exists()


def test_quick_pay_replay_is_per_client_ip(api_client, tokens):
    body = {
        "amount": "5",
        "token_address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        "chain_id": 8453,
        "recipient_address": "0x1111111111111111111111111111111111111111",
    }
    first = api_client.post(
        "/api/v1/quick-pay", body, format="json", HTTP_IDEMPOTENCY_KEY="qp", REMOTE_ADDR="203.0.113.1"
    )
    again = api_client.post(
        "/api/v1/quick-pay", body, format="json", HTTP_IDEMPOTENCY_KEY="qp", REMOTE_ADDR="203.0.113.1"
    )
    elsewhere = api_client.post(
        "/api/v1/quick-pay", body, format="json", HTTP_IDEMPOTENCY_KEY="qp", REMOTE_ADDR="203.0.113.2"
    )

    assert again.json()["id"] == first.json()["id"]
    assert elsewhere.json()["id"] != first.json()["id"]
    assert QuickPayment.objects.count() == 2
    assert not IdempotencyRecord.objects.filter(scope__contains="203.0.113").exists()
