"""Email notifications to the merchant: composed with the event, sent by a worker after commit, retried.

`notify` runs inside `emit_event`'s transaction: a rolled-back business change
sends no email. Each email is a row (the state lives in the database), handed
to a worker on commit; a periodic sweep hands over whatever is due again
(retries, lost tasks). An SMTP failure is retried after
NOTIFICATION_RETRY_DELAYS; then the email is `failed` (at once when no retry
can mend it). The error kept on the row names the failure, never an address.
"""

from __future__ import annotations

import logging
import smtplib
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from chains.registry import chain_get
from chains.tokens import token_get
from core.emails import is_email, redacted
from core.tasks import Later
from platform_api.models import Organization
from webhooks.kinds import EMAIL_KINDS, EmailKind, EventType
from webhooks.models import NotificationEmail, NotificationSettings, WebhookEvent
from webhooks.states import NOTIFICATION_EMAIL

SEND_NOTIFICATION_EMAIL = Later("webhooks.tasks.send_notification_email")

logger = logging.getLogger(__name__)
LEASE = timedelta(seconds=120)  # an attempt in flight; a worker that dies frees it after this
# Failures no retry mends: a header the address cannot go in (BadHeaderError is a ValueError), every
# recipient refused by the mail server.
PERMANENT = (ValueError, smtplib.SMTPRecipientsRefused)

SUBJECTS: dict[EventType, str] = {  # one per event (a test checks): what the merchant's email is titled
    EventType.PAYMENT_COMPLETED: "Payment received: {amount}",
    EventType.PAYMENT_FAILED: "Payment failed and refunded: {amount}",
    EventType.CHECKOUT_COMPLETED: "Checkout completed: {amount}",
    EventType.CHECKOUT_EXPIRED: "Checkout expired",
    EventType.REFUND_CREATED: "Refund created",
    EventType.REFUND_UPDATED: "Refund updated",
    EventType.REFUND_SUCCEEDED: "Refund delivered to the payer",
    EventType.REFUND_FAILED: "Refund failed: its amount is in your refund balance",
}


def _amount_text(data: dict[str, Any]) -> str:
    """`12.5 dUSDC on Devnet B`, from the event's amount, token and chain (raw units when the token is unknown)."""
    chain_id, address, amount = data.get("chain_id"), data.get("token_address"), data.get("amount")
    if chain_id is None or not address or amount is None:
        return "an amount"
    chain = chain_get(int(chain_id))
    token = token_get(chain_id=int(chain_id), address=address)
    where = chain.name if chain else f"chain {chain_id}"
    if token is None:
        return f"{amount} units of {address} on {where}"
    units = format(Decimal(int(amount)).scaleb(-token.decimals).normalize(), "f")
    return f"{units} {token.symbol} on {where}"


def compose(event_type: EventType, data: dict[str, Any]) -> tuple[str, str]:
    """The subject and plain-text body that say what happened, with the amount, token, chain and links."""
    amount = _amount_text(data)
    subject = SUBJECTS[EventType(event_type)].format(amount=amount)
    session = data.get("checkoutSession") or {}
    lines = [subject, ""]
    facts = [
        ("Payment", data.get("id")),
        ("Status", data.get("status")),
        ("Amount", amount if event_type != EventType.CHECKOUT_EXPIRED else None),
        ("Payer", data.get("sender_address") or data.get("from_address") or data.get("payer_address")),
        ("Transaction hash", data.get("tx_hash")),
        ("Payment link", data.get("payment_link_id")),
        (
            "Checkout session",
            session.get("id") or (data.get("id") if event_type == EventType.CHECKOUT_EXPIRED else None),
        ),
        ("Your reference", session.get("clientReferenceId") or data.get("client_reference_id")),
        ("Error", data.get("error")),
        ("Refund transaction", data.get("refund_tx_hash")),
    ]
    lines += [f"{label}: {value}" for label, value in facts if value]
    base = settings.PUBLIC_BASE_URL
    if data.get("object") == "transaction":
        lines += ["", f"See it with the API: GET {base}/api/v1/transactions/{data['id']}"]
    if session.get("id"):
        lines.append(f"The payer's page: {base}/pay/s/{session['id']}")
    lines += ["", "You receive this because this event is enabled in your notification settings."]
    return subject[:200], "\n".join(lines)


def notify(
    *, organization: Organization, event: WebhookEvent | None, event_type: str, data: dict[str, Any]
) -> None:
    """Queue the merchant's email for this event if their settings ask for it (in the event's transaction)."""
    prefs = NotificationSettings.objects.filter(organization=organization, email_enabled=True).first()
    if prefs is None or not prefs.email_address or event_type not in (prefs.enabled_events or []):
        return
    kind = EventType(event_type)
    subject, body = compose(kind, data)
    queue(
        organization=organization,
        event=event,
        event_type=kind,
        to=prefs.email_address,
        subject=subject,
        body=body,
    )


def queue(
    *,
    organization: Organization,
    event,
    event_type: EventType | EmailKind,
    to: str,
    subject: str,
    body: str,
) -> NotificationEmail | None:
    """The email, written now and sent by a worker after commit; None (nothing written) when `to` is not one
    valid address: no row that could never be sent, nor one whose header a typed CR/LF could split. Its kind
    is an event's or an `EmailKind` (a misspelt one raises, in the caller's transaction)."""
    if event_type not in EMAIL_KINDS:
        raise ValueError(f"{event_type!r} is neither a webhook event nor an EmailKind")
    if not is_email(to):
        logger.warning(
            "Notification %s for organization %s not queued: no valid recipient", event_type, organization.pk
        )
        return None
    email = NotificationEmail.objects.create(
        organization=organization,
        event=event,
        event_type=event_type,
        to_address=to,
        subject=subject,
        body=body,
        next_attempt_at=timezone.now(),
    )
    transaction.on_commit(lambda: SEND_NOTIFICATION_EMAIL.delay(email.id))
    return email


def send(email_id: str) -> str | None:
    """One attempt: claim the email (a lease), send it, record the outcome; None if it is not due."""
    now = timezone.now()
    claimed = NotificationEmail.objects.filter(
        pk=email_id, status=NotificationEmail.Status.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=now + LEASE)
    if not claimed:
        return None
    email = NotificationEmail.objects.get(pk=email_id)
    attempts = email.attempts + 1
    try:
        send_mail(
            email.subject, email.body, settings.DEFAULT_FROM_EMAIL, [email.to_address], fail_silently=False
        )
    except Exception as exc:  # whatever the mail backend raises is this attempt's outcome, kept on the row
        delays = settings.NOTIFICATION_RETRY_DELAYS
        # An address the mail system refuses, or one no header can carry, will not be taken on a retry.
        give_up = attempts > len(delays) or isinstance(exc, PERMANENT)
        NOTIFICATION_EMAIL.move(
            NotificationEmail.objects.filter(pk=email_id),
            from_=(NotificationEmail.Status.PENDING,),
            to=NotificationEmail.Status.FAILED if give_up else NotificationEmail.Status.PENDING,
            attempts=attempts,
            last_error=redacted(exc, email.to_address),  # never the address, which the row keeps encrypted
            next_attempt_at=None if give_up else now + timedelta(seconds=delays[attempts - 1]),
        )
        logger.warning(
            "Notification %s to organization %s: attempt %d failed: %s",
            email_id,
            email.organization_id,
            attempts,
            type(exc).__name__,
        )
        return "failed" if give_up else "retry"
    NOTIFICATION_EMAIL.move(
        NotificationEmail.objects.filter(pk=email_id),
        from_=(NotificationEmail.Status.PENDING,),
        to=NotificationEmail.Status.SENT,
        attempts=attempts,
        sent_at=timezone.now(),
        next_attempt_at=None,
        last_error="",
    )
    return "sent"


def due_notification_ids(limit: int = 500) -> list[str]:
    due = Q(status=NotificationEmail.Status.PENDING, next_attempt_at__lte=timezone.now())
    return list(NotificationEmail.objects.filter(due).values_list("pk", flat=True)[:limit])
