"""Notification settings, and the merchant's emails through a real local SMTP server (aiosmtpd)."""

from __future__ import annotations

import socket
from datetime import timedelta
from email import message_from_bytes

import pytest
from aiosmtpd.controller import Controller
from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from tests.conftest import client_for, wait_for
from tests.factories import make_api_key
from webhooks import notifications
from webhooks.events import emit_event
from webhooks.models import NotificationEmail, NotificationSettings
from webhooks.tasks import sweep_due_notifications

pytestmark = pytest.mark.django_db
PAID = {
    "object": "transaction",
    "id": "txn_1",
    "status": "completed",
    "amount": "12500000",
    "chain_id": 8453,
    "token_address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    "tx_hash": "0x" + "ab" * 32,
    "from_address": "0x" + "7" * 40,
    "payment_link_id": "pl_1",
    "checkoutSession": {"id": "cs_1", "clientReferenceId": "cart-9"},
}


class Inbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd calls its hooks by these names
        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def smtp():
    """A real SMTP server on localhost; yields (port, inbox)."""
    inbox, port = Inbox(), _free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield port, inbox
    controller.stop()


def smtp_on(settings, port: int) -> None:
    """The mail backend is SMTP to a server of the test's on localhost."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 5


@pytest.fixture
def enabled(organization):
    return NotificationSettings.objects.create(
        organization=organization,
        email_enabled=True,
        email_address="owner@acme.example",
        enabled_events=["payment.completed", "payment.failed"],
    )


def test_settings_are_read_and_updated_by_admin_keys_only(admin_client, organization):
    got = admin_client.get("/api/v1/notifications").json()
    assert (got["object"], got["email_enabled"], got["enabled_events"]) == (
        "notification_settings",
        False,
        [],
    )
    assert got["id"].startswith("ns_")
    updated = admin_client.patch(
        "/api/v1/notifications",
        {
            "email_enabled": True,
            "email_address": "o@acme.example",
            "enabled_events": ["payment.failed", "payment.completed"],
        },
        format="json",
    )
    assert updated.status_code == 200
    assert updated.json()["enabled_events"] == ["payment.completed", "payment.failed"]
    assert AuditEvent.objects.filter(event_type="notification.updated").count() == 1
    writer = client_for(make_api_key(organization, permissions=["write"])[1])
    assert writer.patch("/api/v1/notifications", {"email_enabled": False}, format="json").status_code == 403
    assert writer.get("/api/v1/notifications").status_code == 200


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"enabled_events": ["payment.lost"]}, "enabled_events[0]"),
        ({"email_enabled": True}, "email_address"),  # no address to send to
        ({"email_address": "not-an-email"}, "email_address"),
        ({"email_enabled": "yes"}, "email_enabled"),
    ],
)
def test_a_bad_update_changes_nothing(admin_client, organization, body, param):
    response = admin_client.patch("/api/v1/notifications", body, format="json")
    assert response.status_code == 400 and response.json()["error"]["param"] == param
    assert not NotificationSettings.objects.filter(email_enabled=True).exists()
    assert not AuditEvent.objects.exists()


def test_an_enabled_event_queues_an_email_that_says_what_happened(organization, enabled, tokens):
    with transaction.atomic():
        emit_event(organization=organization, event_type="payment.completed", data=PAID)
        emit_event(organization=organization, event_type="checkout.completed", data=PAID)  # not enabled
    email = NotificationEmail.objects.get()
    assert email.subject == "Payment received: 12.5 USDC on Base"
    assert "Transaction hash: 0x" + "ab" * 32 in email.body and "Your reference: cart-9" in email.body
    assert "/api/v1/transactions/txn_1" in email.body and "/pay/s/cs_1" in email.body
    assert email.to_address == "owner@acme.example" and email.status == "pending"


def test_a_rolled_back_event_sends_nothing(organization, enabled):
    with pytest.raises(RuntimeError), transaction.atomic():
        emit_event(organization=organization, event_type="payment.completed", data=PAID)
        raise RuntimeError("the business change failed")
    assert not NotificationEmail.objects.exists()


def test_an_smtp_failure_is_retried_then_sent(organization, enabled, settings, tokens):
    port = _free_port()  # nothing listens yet
    smtp_on(settings, port)
    email = notifications.queue(
        organization=organization,
        event=None,
        event_type="payment.completed",
        to="owner@acme.example",
        subject="S",
        body="B",
    )
    assert notifications.send(email.id) == "retry"
    email.refresh_from_db()
    assert (email.status, email.attempts) == ("pending", 1) and "ConnectionRefused" in email.last_error
    assert email.next_attempt_at > timezone.now() + timedelta(seconds=50)
    assert notifications.send(email.id) is None  # not due yet
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        NotificationEmail.objects.filter(pk=email.pk).update(next_attempt_at=timezone.now())
        assert notifications.due_notification_ids() == [email.id]
        assert notifications.send(email.id) == "sent"
    finally:
        controller.stop()
    email.refresh_from_db()
    assert (email.status, email.attempts) == ("sent", 2)
    assert [rcpt for rcpt, _ in inbox.messages] == [["owner@acme.example"]]


def test_attempts_past_the_retries_fail_the_email(organization, settings):
    smtp_on(settings, _free_port())
    settings.NOTIFICATION_RETRY_DELAYS = [0]
    email = notifications.queue(
        organization=organization, event=None, event_type="test", to="o@acme.example", subject="S", body="B"
    )
    assert notifications.send(email.id) == "retry"
    assert notifications.send(email.id) == "failed"
    email.refresh_from_db()
    assert (email.status, email.next_attempt_at) == ("failed", None)
    assert sweep_due_notifications() == 0


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_emails_the_merchant_through_smtp(organization, enabled, smtp, start_worker, tokens):
    port, inbox = smtp
    start_worker(
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(port),
    )
    with transaction.atomic():
        emit_event(organization=organization, event_type="payment.completed", data=PAID)
    wait_for(lambda: inbox.messages, timeout=60)
    recipients, message = inbox.messages[0]
    assert recipients == ["owner@acme.example"]
    assert message["Subject"] == "Payment received: 12.5 USDC on Base"
    assert "cart-9" in message.get_payload()
    wait_for(lambda: NotificationEmail.objects.filter(status="sent").exists(), timeout=30)


def test_the_test_email_is_queued_for_a_worker(admin_client, organization):
    refused = admin_client.post("/api/v1/notifications/test/email")
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "email_address"
    admin_client.patch("/api/v1/notifications", {"email_address": "o@acme.example"}, format="json")
    response = admin_client.post("/api/v1/notifications/test/email")
    assert response.status_code == 202
    assert response.json()["object"] == "action" and response.json()["action"] == "test_email"
    email = NotificationEmail.objects.get()
    assert (email.to_address, email.status, email.event_type) == ("o@acme.example", "pending", "test")


class Refusing(Inbox):
    """A mail server that refuses every recipient, naming it in its answer (as Postfix does)."""

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # aiosmtpd's hook name
        return f"550 5.1.1 <{address}>: Recipient address rejected: User unknown"


def test_a_refused_recipient_fails_at_once_and_its_address_is_kept_nowhere_in_clear(organization, settings):
    port = _free_port()
    controller = Controller(Refusing(), hostname="127.0.0.1", port=port)
    controller.start()
    smtp_on(settings, port)
    try:
        email = notifications.queue(
            organization=organization,
            event=None,
            event_type="receipt.completed",
            to="ada.payer@example.com",
            subject="S",
            body="B",
        )
        assert notifications.send(email.id) == "failed"  # no retry mends a refused recipient
    finally:
        controller.stop()
    email.refresh_from_db()
    assert (email.status, email.attempts, email.next_attempt_at) == ("failed", 1, None)
    assert email.last_error.startswith("SMTPRecipientsRefused: ") and "[address]" in email.last_error
    assert "ada.payer" not in email.last_error and "\n" not in email.last_error
    assert sweep_due_notifications() == 0


def test_an_address_that_would_split_a_header_is_never_queued(organization, caplog):
    """Found by probing: `victim@payer.example\\r\\nBcc: attacker@evil.example` was accepted, its send failed with
    BadHeaderError, and the error column kept the whole address in clear."""
    with caplog.at_level("WARNING"):
        queued = notifications.queue(
            organization=organization,
            event=None,
            event_type="receipt.completed",
            to="victim@payer.example\r\nBcc: attacker@evil.example",
            subject="S",
            body="B",
        )
    assert queued is None and not NotificationEmail.objects.exists()
    assert "victim" not in caplog.text and "not queued" in caplog.text


def test_a_header_error_from_the_mail_backend_fails_the_email_at_once_redacted(organization):
    email = notifications.queue(
        organization=organization, event=None, event_type="test", to="o@acme.example", subject="S", body="B"
    )
    NotificationEmail.objects.filter(pk=email.pk).update(to_address="o@acme.example\nBcc: x@evil.example")
    assert notifications.send(email.id) == "failed"
    email.refresh_from_db()
    assert email.status == "failed" and email.last_error.startswith("BadHeaderError: ")
    assert "acme" not in email.last_error and "evil" not in email.last_error
