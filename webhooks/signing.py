"""How a delivery is signed: the service's own header (hex HMAC-SHA256 of the body) and the Standard Webhooks
headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), with both secrets for 24 hours after a
rotation."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import datetime

from webhooks.crypto import decrypt_secret, sign
from webhooks.models import WebhookDelivery, WebhookEndpoint


def signing_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The current secret, then the one it replaced while that one still signs (24 h after a rotation).

    Decrypted once per endpoint object: a drain signs its batch with the
    endpoint row it read (afresh for each batch), not once per delivery.
    """
    decrypted = endpoint.__dict__.get("_decrypted_secrets")
    if decrypted is None or decrypted[0] != (endpoint.secret_encrypted, endpoint.previous_secret_encrypted):
        previous = endpoint.previous_secret_encrypted
        decrypted = (
            (endpoint.secret_encrypted, previous),
            decrypt_secret(endpoint.secret_encrypted),
            decrypt_secret(previous) if previous else "",
        )
        endpoint.__dict__["_decrypted_secrets"] = decrypted
    _, current, previous_secret = decrypted
    secrets = [current]
    if (
        previous_secret
        and endpoint.previous_secret_expires_at is not None
        and endpoint.previous_secret_expires_at > now
    ):
        secrets.append(previous_secret)
    return secrets


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks `v1,` signature: base64 HMAC-SHA256 of `id.timestamp.body`.

    The key is the base64-decoded part of the secret after `whsec_`, as the
    `standardwebhooks` libraries derive it.
    """
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def delivery_headers(delivery: WebhookDelivery, endpoint: WebhookEndpoint, now: datetime) -> dict[str, str]:
    body = delivery.body.encode()
    secrets = signing_secrets(endpoint, now)
    unix = int(now.timestamp())
    # Standard Webhooks' message id: the event's, the same on every attempt and every resend, so that a
    # receiver de-duplicates by it; a test delivery, which has no event, is its own message.
    message_id = delivery.event_id or delivery.id
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "checkout-service-webhooks/1",
        "X-Service-Signature": sign(body, secrets[0]),
        "X-Service-Webhook-Id": endpoint.id,
        "X-Service-Delivery-Id": delivery.id,
        "X-Service-Event": delivery.event_type,
        "X-Service-Timestamp": delivery.created_at.isoformat().replace("+00:00", "Z"),
        "webhook-id": message_id,
        "webhook-timestamp": str(unix),
        "webhook-signature": " ".join(standard_signature(s, message_id, unix, body) for s in secrets),
    }
    if len(secrets) > 1:
        headers["X-Service-Signature-Previous"] = sign(body, secrets[1])
    if delivery.is_test:
        headers["X-Service-Test"] = "true"
    return headers


# Claim, send, record -------------------------------------------------------------
