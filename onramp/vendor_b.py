"""vendorB adapter: card payment intents and refunds over its form-encoded HTTP API, and its signed webhooks."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from django.conf import settings

from core.http_client import build_session
from onramp.errors import not_configured, vendor_json, vendor_unavailable

VENDOR = "vendorB"
REQUIRED_SETTINGS = ["VENDOR_B_API_URL", "VENDOR_B_SECRET_KEY"]


def is_configured() -> bool:
    return all(getattr(settings, name) for name in REQUIRED_SETTINGS)


class VendorBClient:
    def __init__(self) -> None:
        if not is_configured():
            raise not_configured("Card payments (vendorB)", REQUIRED_SETTINGS)
        self.api_url = settings.VENDOR_B_API_URL.rstrip("/")
        self.session = build_session()  # safe to retry POST: every call carries an Idempotency-Key

    def create_payment_intent(self, *, amount_cents: int, order_id: str) -> str:
        """Create a USD card payment intent for an order; returns its id. Idempotent per order."""
        form = {
            "amount": str(amount_cents),
            "currency": "usd",
            "automatic_payment_methods[enabled]": "true",
            "metadata[order_id]": order_id,
            "description": f"Order {order_id}",
        }
        return self._create("/v1/payment_intents", form, idempotency_key=f"order-{order_id}")

    def refund(self, *, payment_intent_id: str, order_id: str) -> str:
        """Refund a payment intent in full; returns the refund's id. Idempotent per order."""
        form = {"payment_intent": payment_intent_id, "metadata[order_id]": order_id}
        return self._create("/v1/refunds", form, idempotency_key=f"refund-{order_id}")

    def _create(self, path: str, form: dict[str, str], *, idempotency_key: str) -> str:
        """POST a form that creates one object (retried safely under its Idempotency-Key); the object's id."""
        data = vendor_json(
            VENDOR,
            lambda: self.session.post(
                f"{self.api_url}{path}",
                data=form,
                headers={
                    "Authorization": f"Bearer {settings.VENDOR_B_SECRET_KEY}",
                    "Idempotency-Key": idempotency_key,
                },
                timeout=settings.PROVIDER_TIMEOUT_SECONDS,
                allow_redirects=False,
            ),
            lambda body: (body.get("error") or {}).get("message"),
        )
        if not isinstance(data, dict) or not data.get("id"):
            raise vendor_unavailable(VENDOR)
        return str(data["id"])


class WebhookRejected(ValueError):
    """A webhook that is not vendorB's, or not now: bad or missing signature, stale timestamp, bad body."""


def webhook_event(body: bytes, signature_header: str, *, now: float | None = None) -> dict:
    """The event of a vendorB webhook, once its signature is checked.

    The header is `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the webhook secret>` (several
    `v1` while a secret is rolled). Compared in constant time; a timestamp further than the tolerance from
    now is refused, so a captured delivery cannot be replayed later.
    """
    secret = settings.VENDOR_B_WEBHOOK_SECRET
    if not secret:
        raise WebhookRejected("vendorB webhooks are not configured (VENDOR_B_WEBHOOK_SECRET)")
    parts = [item.split("=", 1) for item in signature_header.split(",") if "=" in item]
    timestamps = [value for key, value in parts if key.strip() == "t"]
    signatures = [value.strip() for key, value in parts if key.strip() == "v1"]
    if len(timestamps) != 1 or not timestamps[0].strip().isdigit() or not signatures:
        raise WebhookRejected("the signature header is missing or malformed")
    timestamp = int(timestamps[0])
    if (
        abs((now if now is not None else time.time()) - timestamp)
        > settings.VENDOR_B_WEBHOOK_TOLERANCE_SECONDS
    ):
        raise WebhookRejected("the signature's timestamp is outside the tolerance")
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, signature) for signature in signatures):
        raise WebhookRejected("the signature does not match")
    try:
        event = json.loads(body)
    except ValueError:
        raise WebhookRejected("the body is not JSON") from None
    if (
        not isinstance(event, dict)
        or not isinstance(event.get("id"), str)
        or not isinstance(event.get("type"), str)
    ):
        raise WebhookRejected("the body is not an event")
    return event
