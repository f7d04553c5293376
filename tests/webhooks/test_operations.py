from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from tests.conftest import staff_verified
from tests.factories import OrganizationFactory
from tests.webhooks.conftest import make_endpoint
from webhooks.crypto import decrypt_secret, encrypt_secret, sign
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def failed(organization):
    endpoint, _ = make_endpoint(organization, "https://hooks.example.com/a")
    other, _ = make_endpoint(OrganizationFactory(slug="other"), "https://hooks.example.com/b")
    old = timezone.now() - timedelta(days=2)
    rows = [
        WebhookDelivery.objects.create(
            endpoint=endpoint, event_type="payment.completed", body="{}", status="failed", attempts=4
        ),
        WebhookDelivery.objects.create(
            endpoint=endpoint,
            event_type="payment.completed",
            body="{}",
            status="failed",
            attempts=4,
            created_at=old,
        ),
        WebhookDelivery.objects.create(
            endpoint=other, event_type="payment.completed", body="{}", status="failed", attempts=4
        ),
        WebhookDelivery.objects.create(
            endpoint=endpoint, event_type="payment.completed", body="{}", status="success", attempts=1
        ),
    ]
    return endpoint, rows


def _statuses():
    return sorted(WebhookDelivery.objects.values_list("status", flat=True))


def test_retry_command_filters_by_webhook_and_time(failed, capsys, django_capture_on_commit_callbacks):
    endpoint, rows = failed
    since = (timezone.now() - timedelta(hours=1)).isoformat()
    with django_capture_on_commit_callbacks() as callbacks:
        call_command("retry_failed_deliveries", "--webhook", endpoint.id, "--since", since)

    assert "Queued 1 failed deliveries" in capsys.readouterr().out
    rows[0].refresh_from_db()
    assert (rows[0].status, rows[0].next_attempt_at is not None) == ("pending", True)
    assert _statuses() == ["failed", "failed", "pending", "success"]
    assert len(callbacks) == 1


def test_retry_command_by_organization_and_dry_run(failed, capsys):
    call_command("retry_failed_deliveries", "--org", "acme", "--dry-run")
    assert "2 failed deliveries match" in capsys.readouterr().out
    assert _statuses() == ["failed", "failed", "failed", "success"]


def test_retry_command_refuses_bad_times(failed):
    with pytest.raises(CommandError):
        call_command("retry_failed_deliveries", "--since", "last tuesday")


def test_admin_pages_and_actions(admin_user, failed):
    endpoint, rows = failed
    WebhookAttempt.objects.create(delivery=rows[0], number=1, response_code=500, error="HTTP 500")
    staff = Client()
    staff_verified(staff, admin_user)
    for url in (
        "/admin/webhooks/webhookendpoint/",
        "/admin/webhooks/webhookdelivery/?status__exact=failed",
        f"/admin/webhooks/webhookdelivery/{quote(rows[0].pk)}/change/",
        "/admin/webhooks/webhookevent/",
    ):
        assert staff.get(url).status_code == 200, url
    # The admin escapes "_" in ids: an unescaped "del_3B..." would name another (missing) delivery.
    assert (
        "HTTP 500"
        in staff.get(f"/admin/webhooks/webhookdelivery/{quote(rows[0].pk)}/change/").content.decode()
    )

    staff.post("/admin/webhooks/webhookendpoint/", {"action": "disable", "_selected_action": [endpoint.pk]})
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_active is False
    staff.post("/admin/webhooks/webhookendpoint/", {"action": "enable", "_selected_action": [endpoint.pk]})
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_active is True

    staff.post(
        "/admin/webhooks/webhookdelivery/",
        {"action": "retry_failed", "_selected_action": [rows[0].pk, rows[3].pk]},
    )
    assert WebhookDelivery.objects.get(pk=rows[0].pk).status == "pending"
    assert WebhookDelivery.objects.get(pk=rows[3].pk).status == "success"


def test_admin_actions_go_through_the_service_audited_and_resending_what_the_pause_held(
    admin_user, organization, django_capture_on_commit_callbacks
):
    from audit.models import AuditEvent

    endpoint, _ = make_endpoint(organization, "https://hooks.example.com/a")
    staff = Client()
    staff_verified(staff, admin_user)
    staff.post("/admin/webhooks/webhookendpoint/", {"action": "disable", "_selected_action": [endpoint.pk]})
    paused = WebhookEndpoint.objects.get(pk=endpoint.pk)
    assert (paused.is_active, paused.disabled_reason) == (False, f"disabled by staff ({admin_user})")
    held = WebhookDelivery.objects.create(
        endpoint=endpoint, event_type="payment.completed", body="{}", status="pending", next_attempt_at=None
    )

    with django_capture_on_commit_callbacks() as callbacks:
        staff.post(
            "/admin/webhooks/webhookendpoint/", {"action": "enable", "_selected_action": [endpoint.pk]}
        )

    resumed = WebhookEndpoint.objects.get(pk=endpoint.pk)
    assert (resumed.is_active, resumed.disabled_reason) == (True, "")
    held.refresh_from_db()
    assert held.next_attempt_at is not None and held.next_attempt_at <= timezone.now()
    assert callbacks, "the held delivery is queued for a worker"
    audited = AuditEvent.objects.filter(organization=organization, resource_id=endpoint.pk)
    updates = audited.filter(event_type="webhook.updated").values_list("request_path", flat=True)
    assert list(updates) == ["/admin/webhooks/webhookendpoint/"] * 2
    form = staff.post(f"/admin/webhooks/webhookendpoint/{quote(endpoint.pk)}/change/", {"is_active": ""})
    # Saved with every field read-only: back to the list (a wrong id would go to the admin's index).
    assert (form.status_code, form.url) == (302, "/admin/webhooks/webhookendpoint/")
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_active is True  # the form changes nothing


def test_secrets_round_trip_and_tampering_is_detected():
    token = encrypt_secret("whsec_abc")
    assert token.startswith("v1:")
    assert "whsec_abc" not in token
    assert decrypt_secret(token) == "whsec_abc"
    assert encrypt_secret("whsec_abc") != token  # a fresh nonce each time
    tampered = token[:-4] + ("AAAA" if token[-4:] != "AAAA" else "BBBB")
    with pytest.raises(ValueError):
        decrypt_secret(tampered)


def test_signature_is_hex_hmac_sha256_of_the_body():
    # hmac.new(b"key", b"The quick brown fox jumps over the lazy dog", sha256)
    assert sign(b"The quick brown fox jumps over the lazy dog", "key") == (
        "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    )
