"""The order interface's checkout sessions (`/checkout-sessions`): the checkout's one session, shown in that
interface's words and envelope."""

import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from checkout.models import CheckoutSession
from checkout.sessions import sessions_expire_due
from checkout.tasks import expire_sessions
from tests.factories import CheckoutSessionFactory, OrganizationFactory, make_api_key
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


def _create(client, body=None, **extra):
    return client.post("/checkout-sessions", body or {}, format="json", **extra)


def test_create_with_defaults(api_client):
    response = _create(api_client)

    assert response.status_code == 200
    body = response.json()
    assert (body["success"], body["statusCode"]) == (True, 200)
    data = body["data"]
    session = CheckoutSession.objects.get(pk=data["id"])
    assert data["status"] == "open"
    assert data["metadata"] == {}
    assert data["success_url"] is None and data["cancel_url"] is None
    assert (session.expires_at - session.created_at) == timedelta(seconds=1800)
    assert session.organization is None


def test_templates_and_metadata_come_back_unchanged(api_client):
    body = {
        "success_url": "https://shop.example/done?session={SESSION_ID}&order={ORDER_ID}",
        "cancel_url": "http://localhost:3000/cart",
        "metadata": {"cart": [1, 2], "nested": {"a": None}},
        "client_reference_id": "cust_42",
        "expires_in": 300,
    }
    data = _create(api_client, body).json()["data"]
    assert data["success_url"] == body["success_url"]
    assert data["cancel_url"] == body["cancel_url"]
    assert data["metadata"] == body["metadata"]
    assert data["client_reference_id"] == "cust_42"
    fetched = api_client.get(f"/checkout-sessions/{data['id']}").json()["data"]
    assert fetched == data


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expires_in": 299}, "expires_in"),
        ({"expires_in": 86401}, "expires_in"),
        ({"expires_in": "1800"}, "expires_in"),
        ({"success_url": "/relative"}, "success_url"),
        ({"success_url": "javascript:alert(1)"}, "success_url"),
        ({"cancel_url": "https://x.example/{USER}"}, "cancel_url"),
        ({"metadata": [1]}, "metadata"),
        ({"metadata": {"k": "v" * 9000}}, "metadata"),
        ({"client_reference_id": "x" * 256}, "client_reference_id"),
        ({"unexpected": True}, "unexpected"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_stores_nothing(api_client, body, field):
    response = _create(api_client, body)
    assert response.status_code == 400
    assert response.json()["success"] is False
    assert response.json()["message"].startswith(field)
    assert not CheckoutSession.objects.exists()


def test_session_created_with_a_key_belongs_to_its_organization(api_client, organization):
    _, raw = make_api_key(organization, permissions=["write"])
    data = _create(api_client, HTTP_AUTHORIZATION=f"Bearer {raw}").json()["data"]
    assert CheckoutSession.objects.get(pk=data["id"]).organization == organization


def test_expire_an_open_session_emits_checkout_expired(api_client, organization):
    _, raw = make_api_key(organization, permissions=["write"])
    session_id = _create(api_client, HTTP_AUTHORIZATION=f"Bearer {raw}").json()["data"]["id"]

    response = api_client.post(f"/checkout-sessions/{session_id}/expire")

    assert response.status_code == 200
    assert response.json()["data"] == {"id": session_id, "status": "expired"}
    event = WebhookEvent.objects.get()
    assert (event.organization, event.event_type, event.data["id"]) == (
        organization,
        "checkout.expired",
        session_id,
    )


@pytest.mark.parametrize("session_id", ["not-a-uuid", str(uuid.uuid4())])
def test_expire_malformed_or_unknown_is_400(api_client, session_id):
    response = api_client.post(f"/checkout-sessions/{session_id}/expire")
    assert response.status_code == 400
    assert response.json()["success"] is False


def test_expire_twice_is_400_and_emits_once(api_client):
    session_id = _create(api_client).json()["data"]["id"]
    api_client.post(f"/checkout-sessions/{session_id}/expire")
    again = api_client.post(f"/checkout-sessions/{session_id}/expire")
    assert again.status_code == 400
    assert CheckoutSession.objects.get(pk=session_id).status == "expired"


def test_anonymous_sessions_emit_no_webhook_event(api_client):
    session_id = _create(api_client).json()["data"]["id"]
    api_client.post(f"/checkout-sessions/{session_id}/expire")
    assert not WebhookEvent.objects.exists()


def test_get_unknown_session_is_404_and_malformed_is_400(api_client):
    assert api_client.get(f"/checkout-sessions/{uuid.uuid4()}").status_code == 404
    assert api_client.get("/checkout-sessions/xyz").status_code == 400


def test_periodic_expiry_expires_only_sessions_past_their_time(api_client):
    org = OrganizationFactory()
    late = CheckoutSessionFactory(organization=org, expires_at=timezone.now() - timedelta(seconds=1))
    fresh = CheckoutSessionFactory(expires_at=timezone.now() + timedelta(minutes=5))

    assert expire_sessions() == 1
    assert sessions_expire_due() == 0

    late.refresh_from_db()
    fresh.refresh_from_db()
    assert (late.status, fresh.status) == ("expired", "open")
    assert WebhookEvent.objects.get().data["reason"] == "timeout"


def test_expiry_command(capsys):
    CheckoutSessionFactory(expires_at=timezone.now() - timedelta(seconds=1))
    call_command("expire_checkout_sessions")
    assert "Expired 1 checkout sessions" in capsys.readouterr().out
