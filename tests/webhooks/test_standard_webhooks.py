"""Standard Webhooks headers (replay protection for receivers) and secret rotation."""

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from werkzeug import Response

from tests.conftest import client_for
from tests.factories import make_api_key
from tests.webhooks.conftest import verify
from webhooks.delivery import attempt_delivery
from webhooks.events import emit_event
from webhooks.models import WebhookDelivery

DATA = {"order_id": "ord_1"}


@pytest.fixture
def endpoint(organization, receiver):
    from tests.webhooks.conftest import make_endpoint

    return make_endpoint(organization, receiver.url_for("/hook"))


def _capture(receiver):
    seen = []
    receiver.expect_request("/hook").respond_with_handler(
        lambda request: (seen.append(request), Response("ok"))[1]
    )
    return seen


def test_deliveries_verify_with_the_standard_webhooks_library(organization, endpoint, receiver):
    endpoint, secret = endpoint
    seen = _capture(receiver)
    emit_event(organization=organization, event_type="payment.completed", data=DATA)
    delivery = WebhookDelivery.objects.get()
    attempt_delivery(delivery.id)

    request = seen[0]
    payload = Webhook(secret).verify(request.get_data(), dict(request.headers))
    assert payload["data"] == DATA
    assert (
        request.headers["webhook-id"] == delivery.event_id
    )  # the event's id: the same on every attempt and resend
    verify(request, secret)  # the contract's X-Service-Signature still holds


def test_an_old_captured_delivery_is_refused_by_the_library(organization, endpoint, receiver):
    endpoint, secret = endpoint
    seen = _capture(receiver)
    emit_event(organization=organization, event_type="payment.completed", data=DATA)
    attempt_delivery(WebhookDelivery.objects.get().id)
    headers = {k.lower(): v for k, v in seen[0].headers.items()}
    headers["webhook-timestamp"] = str(int(headers["webhook-timestamp"]) - 3600)  # replayed an hour later
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(seen[0].get_data(), headers)


def test_rotation_returns_a_new_secret_once_and_both_sign_for_the_overlap(
    admin_client, organization, endpoint, receiver, settings
):
    endpoint, old_secret = endpoint
    response = admin_client.post(f"/api/v1/webhooks/{endpoint.id}/rotate-secret")
    assert response.status_code == 200
    new_secret = response.json()["data"]["secret"]
    assert new_secret.startswith("whsec_") and new_secret != old_secret
    assert "secret" not in admin_client.get(f"/api/v1/webhooks/{endpoint.id}").json()["data"]

    seen = _capture(receiver)
    emit_event(organization=organization, event_type="payment.completed", data=DATA)
    attempt_delivery(WebhookDelivery.objects.get().id)
    request = seen[0]
    for secret in (old_secret, new_secret):
        Webhook(secret).verify(request.get_data(), dict(request.headers))
    verify(request, new_secret)
    assert request.headers["X-Service-Signature-Previous"] != request.headers["X-Service-Signature"]

    # After the overlap only the new secret signs.
    settings.WEBHOOK_SECRET_ROTATION_OVERLAP_SECONDS = 0
    admin_client.post(f"/api/v1/webhooks/{endpoint.id}/rotate-secret")
    newest = admin_client.post(f"/api/v1/webhooks/{endpoint.id}/rotate-secret").json()["data"]["secret"]
    emit_event(organization=organization, event_type="payment.completed", data=DATA)
    attempt_delivery(WebhookDelivery.objects.filter(attempts=0).get().id)
    request = seen[1]
    Webhook(newest).verify(request.get_data(), dict(request.headers))
    assert len(request.headers["webhook-signature"].split(" ")) == 1
    assert "X-Service-Signature-Previous" not in request.headers


def test_rotation_needs_admin_and_is_audited(organization, endpoint, admin_client):
    endpoint, _ = endpoint
    _, raw = make_api_key(organization, permissions=["write"])
    assert client_for(raw).post(f"/api/v1/webhooks/{endpoint.id}/rotate-secret").status_code == 403
    admin_client.post(f"/api/v1/webhooks/{endpoint.id}/rotate-secret")
    events = admin_client.get("/api/v1/events?type=webhook.secret_rotated").json()["data"]
    assert [e["resource_id"] for e in events] == [endpoint.id]
