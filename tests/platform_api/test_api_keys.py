import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from platform_api.models import ApiKey
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key

pytestmark = pytest.mark.django_db


def test_create_returns_full_key_once_and_stores_only_its_digest(admin_client, organization):
    response = admin_client.post(
        "/api/v1/api-keys", {"name": "server", "permissions": ["read", "write"]}, format="json"
    )

    assert response.status_code == 201
    body = response.json()
    assert body["object"] == "api_key"
    assert body["id"].startswith("ak_")
    assert body["key"].startswith("svc_live_")
    assert len(body["key"]) >= len("svc_live_") + 32
    assert body["key_prefix"] == body["key"][: len(body["key_prefix"])]
    assert body["permissions"] == ["read", "write"]
    assert body["is_active"] is True
    assert body["expires_at"] is None
    assert isinstance(body["created_at"], int)

    stored = ApiKey.objects.get(pk=body["id"])
    assert stored.organization == organization
    assert stored.key_digest == hashlib.sha256(body["key"].encode()).hexdigest()
    assert body["key"] not in str(ApiKey.objects.filter(pk=body["id"]).values().get())

    listed = admin_client.get("/api/v1/api-keys").json()
    assert all("key" not in item for item in listed["data"])


def test_new_key_authenticates_with_either_header(admin_client, api_client):
    raw = admin_client.post("/api/v1/api-keys", {"name": "r", "permissions": ["read"]}, format="json").json()[
        "key"
    ]

    assert api_client.get("/api/v1/events", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    assert api_client.get("/api/v1/events", HTTP_X_API_KEY=raw).status_code == 200


def test_create_records_audit_event_with_request_facts(admin_client, organization):
    response = admin_client.post(
        "/api/v1/api-keys", {"name": "x", "permissions": ["read"]}, format="json", REMOTE_ADDR="198.51.100.4"
    )

    event = AuditEvent.objects.get(event_type="api_key.created")
    assert event.organization == organization
    assert event.resource_type == "api_key"
    assert event.resource_id == response.json()["id"]
    assert event.request_method == "POST"
    assert event.request_path == "/api/v1/api-keys"
    assert event.status_code == 201
    assert event.ip_address == "198.51.100.4"


def test_create_with_expiry_in_milliseconds(admin_client):
    expires = int((timezone.now() + timedelta(days=1)).timestamp() * 1000)

    body = admin_client.post(
        "/api/v1/api-keys", {"name": "x", "permissions": ["read"], "expires_at": expires}, format="json"
    ).json()

    assert body["expires_at"] == expires


@pytest.mark.parametrize(
    ("payload", "code", "param"),
    [
        ({"permissions": ["read"]}, "missing_required_field", "name"),
        ({"name": "x"}, "missing_required_field", "permissions"),
        ({"name": "x", "permissions": []}, "invalid_field_value", "permissions"),
        ({"name": "x", "permissions": ["root"]}, "invalid_field_value", "permissions[0]"),
        ({"name": "x", "permissions": "admin"}, "invalid_field_value", "permissions"),
        ({"name": 5, "permissions": ["read"]}, "invalid_field_value", "name"),
        ({"name": "x" * 101, "permissions": ["read"]}, "invalid_field_value", "name"),
        ({"name": "x", "permissions": ["read"], "expires_at": 1000}, "invalid_field_value", "expires_at"),
        ({"name": "x", "permissions": ["read"], "expires_at": "soon"}, "invalid_field_value", "expires_at"),
    ],
)
def test_invalid_create_is_400_with_param_and_writes_nothing(admin_client, payload, code, param):
    before = ApiKey.objects.count()

    response = admin_client.post("/api/v1/api-keys", payload, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == code
    assert error["param"] == param
    assert ApiKey.objects.count() == before
    assert not AuditEvent.objects.exists()


def test_list_is_the_list_envelope_of_own_keys_newest_first(admin_client, admin_key, organization):
    second, _ = make_api_key(organization, permissions=["read"], name="second")
    make_api_key(OrganizationFactory(slug="other"), name="foreign")

    body = admin_client.get("/api/v1/api-keys").json()

    assert body["object"] == "list"
    assert body["url"] == "/api/v1/api-keys"
    assert body["total_count"] == 2
    assert body["has_more"] is False
    assert [k["id"] for k in body["data"]] == [second.id, admin_key[0].id]
    assert body["data"][0]["key_prefix"] == second.key_prefix
    assert "last_used_at" in body["data"][0]


def test_revoke_is_immediate_and_audited(admin_client, organization):
    target, raw = make_api_key(organization, permissions=["read"])
    assert client_for(raw).get("/api/v1/events").status_code == 200

    response = admin_client.delete(f"/api/v1/api-keys/{target.id}")

    assert response.status_code == 200
    assert response.json() == {"object": "api_key_revoked", "id": target.id, "revoked": True}
    after = client_for(raw).get("/api/v1/events")
    assert after.status_code == 401
    assert after.json()["error"]["code"] == "key_revoked"
    target.refresh_from_db()
    assert target.is_active is False
    assert target.revoked_at is not None
    event = AuditEvent.objects.get(event_type="api_key.revoked")
    assert (event.resource_id, event.request_method, event.status_code) == (target.id, "DELETE", 200)


def test_revoking_twice_answers_the_same_and_audits_once(admin_client, organization):
    target, _ = make_api_key(organization, permissions=["read"])

    first = admin_client.delete(f"/api/v1/api-keys/{target.id}")
    second = admin_client.delete(f"/api/v1/api-keys/{target.id}")

    assert first.json() == second.json()
    assert AuditEvent.objects.filter(event_type="api_key.revoked").count() == 1


def test_revoking_another_organizations_key_is_404_and_changes_nothing(admin_client):
    foreign, _ = make_api_key(OrganizationFactory(slug="other"))

    response = admin_client.delete(f"/api/v1/api-keys/{foreign.id}")

    assert response.status_code == 404
    assert response.json()["error"] == {
        "type": "not_found_error",
        "code": "resource_not_found",
        "message": f"No api_key with id '{foreign.id}'.",
    }
    foreign.refresh_from_db()
    assert foreign.is_active is True


@pytest.mark.parametrize("permission", ["read", "write"])
def test_key_management_needs_admin(organization, permission):
    _, raw = make_api_key(organization, permissions=[permission])
    client = client_for(raw)

    for response in (
        client.get("/api/v1/api-keys"),
        client.post("/api/v1/api-keys", {"name": "x", "permissions": ["read"]}, format="json"),
    ):
        assert response.status_code == 403
        error = response.json()["error"]
        assert error["type"] == "permission_error"
        assert error["code"] == "insufficient_permissions"
        assert "'admin'" in error["message"]
    assert ApiKey.objects.count() == 1
