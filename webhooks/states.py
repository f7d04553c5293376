"""The webhooks' status machines (core.machines): a delivery of an event, a notification email."""

from __future__ import annotations

from core.machines import Machine
from webhooks.models import NotificationEmail, WebhookDelivery

D = WebhookDelivery.Status
DELIVERY = Machine(
    "webhooks.WebhookDelivery.status",
    moves={D.PENDING: {D.SUCCESS, D.FAILED}, D.SUCCESS: {D.PENDING}, D.FAILED: {D.PENDING}},
    initial=(D.PENDING,),
    meanings={
        D.PENDING: "due at its next attempt (retried with backoff)",
        D.SUCCESS: "the endpoint answered 2xx; resent on request",
        D.FAILED: "every attempt failed, or the endpoint is gone; retried on request",
    },
)

N = NotificationEmail.Status
NOTIFICATION_EMAIL = Machine(
    "webhooks.NotificationEmail.status",
    moves={N.PENDING: {N.SENT, N.FAILED}, N.SENT: set(), N.FAILED: set()},
    initial=(N.PENDING,),
    meanings={
        N.PENDING: "due at its next attempt",
        N.SENT: "the mail server took it",
        N.FAILED: "every attempt failed",
    },
)
