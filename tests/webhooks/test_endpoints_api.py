import pytest

from audit.models import AuditEvent
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key
from webhooks.crypto import decrypt_secret
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.urlguard import validate_webhook_url

pytestmark = pytest.mark.django_db

URL = "https://hooks.example.com/checkout"


@pytest.fixture(autouse=True)
def _public_dns(monkeypatch):
    """hooks.example.com resolves to a public address (tests never use real DNS)."""
    import socket

    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        table = {
            "hooks.example.com": "93.184.216.34",
            "internal.example.com": "10.0.0.5",
            "cgnat.example.com": "100.64.1.1",
        }
        if host in table:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (table[host], 443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def _create(client, **body):
    return client.post("/api/v1/webhooks", {"url": URL, "events": ["*"], **body}, format="json")


def test_create_returns_the_secret_once_and_stores_it_encrypted(admin_client, organization):
    response = _create(admin_client, events=["payment.completed", "checkout.expired"], description="prod")

    assert response.status_code == 201
    body = response.json()
    assert body["success"] is True
    data = body["data"]
    assert data["id"].startswith("wh_")
    assert data["secret"].startswith("whsec_")
    assert (data["url"], data["events"], data["description"]) == (
        URL,
        ["payment.completed", "checkout.expired"],
        "prod",
    )
    assert (data["is_active"], data["success_count"], data["failure_count"], data["last_triggered_at"]) == (
        True,
        0,
        0,
        None,
    )
    endpoint = WebhookEndpoint.objects.get(pk=data["id"])
    assert data["secret"] not in endpoint.secret_encrypted
    assert decrypt_secret(endpoint.secret_encrypted) == data["secret"]
    assert "secret" not in admin_client.get(f"/api/v1/webhooks/{data['id']}").json()["data"]
    assert all("secret" not in w for w in admin_client.get("/api/v1/webhooks").json()["data"])
    assert AuditEvent.objects.filter(
        event_type="webhook.created", resource_id=data["id"], status_code=201
    ).exists()


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"url": None}, "missing_required_field", "url"),
        ({"events": None}, "missing_required_field", "events"),
        ({"url": "http://hooks.example.com/x"}, "invalid_field_value", "url"),
        ({"url": "ftp://hooks.example.com/x"}, "invalid_field_value", "url"),
        ({"url": "https://internal.example.com/x"}, "invalid_field_value", "url"),
        ({"url": "https://cgnat.example.com/x"}, "invalid_field_value", "url"),
        ({"url": "https://169.254.169.254/latest/meta-data"}, "invalid_field_value", "url"),
        ({"url": "https://10.1.2.3/x"}, "invalid_field_value", "url"),
        ({"url": "https://user:pw@hooks.example.com/x"}, "invalid_field_value", "url"),
        ({"events": []}, "invalid_field_value", "events"),
        ({"events": ["payment.refunded"]}, "invalid_field_value", "events[0]"),
        ({"events": ["*", "payment.failed"]}, "invalid_field_value", "events"),
        ({"events": "payment.failed"}, "invalid_field_value", "events"),
    ],
)
def test_invalid_endpoints_are_400_with_param_and_nothing_is_stored(admin_client, body, code, param):
    payload = {k: v for k, v in {"url": URL, "events": ["*"], **body}.items() if v is not None}
    response = admin_client.post("/api/v1/webhooks", payload, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["param"]) == (code, param)
    assert not WebhookEndpoint.objects.exists()


def test_localhost_is_refused_outside_development(settings):
    from webhooks.urlguard import UnsafeWebhookUrl

    settings.WEBHOOK_ALLOW_LOCALHOST = False
    for url in ("http://localhost:9000/x", "https://127.0.0.1/x", "https://[::1]/x"):
        with pytest.raises(UnsafeWebhookUrl):
            validate_webhook_url(url)
    settings.WEBHOOK_ALLOW_LOCALHOST = True
    validate_webhook_url("http://127.0.0.1:9000/x")


def test_update_replaces_events_and_pauses(admin_client):
    webhook_id = _create(admin_client).json()["data"]["id"]

    response = admin_client.patch(
        f"/api/v1/webhooks/{webhook_id}", {"events": ["payment.failed"], "is_active": False}, format="json"
    )

    assert response.status_code == 200
    data = response.json()["data"]
    assert (data["events"], data["is_active"]) == (["payment.failed"], False)
    assert AuditEvent.objects.filter(event_type="webhook.updated", resource_id=webhook_id).count() == 1


@pytest.mark.parametrize("body", [{}, {"unknown": 1}, {"description": "not updatable"}])
def test_update_without_valid_fields_is_no_updates_provided(admin_client, body):
    webhook_id = _create(admin_client).json()["data"]["id"]
    response = admin_client.patch(f"/api/v1/webhooks/{webhook_id}", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "no_updates_provided"
    assert not AuditEvent.objects.filter(event_type="webhook.updated").exists()


def test_update_with_a_bad_value_is_400_with_param(admin_client):
    webhook_id = _create(admin_client).json()["data"]["id"]
    response = admin_client.patch(f"/api/v1/webhooks/{webhook_id}", {"is_active": "yes"}, format="json")
    assert response.json()["error"]["param"] == "is_active"
    response = admin_client.patch(
        f"/api/v1/webhooks/{webhook_id}", {"url": "https://10.0.0.1/"}, format="json"
    )
    assert response.json()["error"]["param"] == "url"
    assert WebhookEndpoint.objects.get(pk=webhook_id).url == URL


def test_delete_removes_the_endpoint_and_its_pending_deliveries(admin_client):
    webhook_id = _create(admin_client).json()["data"]["id"]
    WebhookDelivery.objects.create(endpoint_id=webhook_id, event_type="payment.completed", body="{}")

    response = admin_client.delete(f"/api/v1/webhooks/{webhook_id}")

    assert response.status_code == 200
    assert response.json() == {"success": True, "data": {"id": webhook_id, "deleted": True}}
    assert not WebhookEndpoint.objects.exists()
    assert not WebhookDelivery.objects.exists()
    assert AuditEvent.objects.filter(event_type="webhook.deleted", resource_id=webhook_id).exists()
    assert admin_client.get(f"/api/v1/webhooks/{webhook_id}").status_code == 404


def test_permissions_read_can_list_and_get_but_not_manage(admin_client, organization):
    webhook_id = _create(admin_client).json()["data"]["id"]
    _, raw = make_api_key(organization, permissions=["write"])
    writer = client_for(raw)

    assert writer.get("/api/v1/webhooks").status_code == 200
    assert writer.get(f"/api/v1/webhooks/{webhook_id}").status_code == 200
    assert writer.get(f"/api/v1/webhooks/{webhook_id}/deliveries").status_code == 200
    for response in (
        _create(writer),
        writer.patch(f"/api/v1/webhooks/{webhook_id}", {"is_active": False}, format="json"),
        writer.delete(f"/api/v1/webhooks/{webhook_id}"),
        writer.post(f"/api/v1/webhooks/{webhook_id}/test"),
        writer.post(f"/api/v1/webhooks/{webhook_id}/deliveries/del_x/retry"),
    ):
        assert response.status_code == 403
        assert "'admin'" in response.json()["error"]["message"]
    assert WebhookEndpoint.objects.get().is_active is True


def test_another_organizations_endpoint_is_not_found(admin_client):
    _, raw = make_api_key(OrganizationFactory(slug="rival"))
    foreign = _create(client_for(raw)).json()["data"]["id"]
    for response in (
        admin_client.get(f"/api/v1/webhooks/{foreign}"),
        admin_client.patch(f"/api/v1/webhooks/{foreign}", {"is_active": False}, format="json"),
        admin_client.delete(f"/api/v1/webhooks/{foreign}"),
        admin_client.post(f"/api/v1/webhooks/{foreign}/test"),
        admin_client.get(f"/api/v1/webhooks/{foreign}/deliveries"),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["message"] == f"No webhook with id '{foreign}'."
    assert admin_client.get("/api/v1/webhooks").json()["data"] == []
    assert WebhookEndpoint.objects.get().is_active is True
