"""The relay provider's webhooks: a status change of one of the vault's requests drives its order at once.

Relay posts `request.status.updated` (`{event, timestamp, data: {status, inTxHashes, txHashes, updatedAt,
originChainId, destinationChainId, requestId}}`) to the endpoint configured for the API key, signed with
HMAC-SHA256 of `${timestamp}.${raw body}` keyed by the API key: the hex digest in `X-Signature-SHA256`, the
timestamp in `X-Signature-Timestamp` (https://docs.relay.link/references/api/api_guides/webhooks). A delivery
is refused unless its signature is right (401), its timestamp within five minutes (400) and its request one
of an order waiting for the relay (400); refused, it changes nothing.

The event is a prompt, not evidence: the order's settlement asks the provider for the request's status, as
its poll does (`RelayProvider.deliver`), and counts a fill only once the destination chain shows it. Polling
(`orders.tasks.poll_relays`) remains the fallback for an event that never comes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from django.conf import settings

from core.errors import InvalidRequest
from orders.models import Order
from orders.settlement import enqueue_settlement

TOLERANCE_SECONDS = 300
WAITING_FOR_RELAY = (Order.Status.RELAY, Order.Status.EXECUTING)


class SignatureRefused(Exception):
    """The delivery is not signed with the API key: answered 401."""


def _seconds(timestamp: str) -> float:
    try:
        value = int(timestamp)
    except ValueError:
        raise InvalidRequest(
            "X-Signature-Timestamp must be a Unix time.", field="X-Signature-Timestamp"
        ) from None
    return value / 1000 if value > 10**11 else value  # the provider's times are in milliseconds


def relay_webhook(*, body: bytes, timestamp: str, signature: str) -> str:
    """Verify one delivery and drive the order whose request it is about; what was done, in a few words."""
    key = settings.RELAY_API_KEY
    if not key:  # nothing can be verified: every delivery is refused, as a bad signature is
        raise SignatureRefused("RELAY_API_KEY is not set, so no delivery can be verified")
    expected = hmac.new(key.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature.strip().lower()):
        raise SignatureRefused("the signature does not match")
    if abs(time.time() - _seconds(timestamp)) > TOLERANCE_SECONDS:
        raise InvalidRequest("the delivery is too old (or from the future).", field="X-Signature-Timestamp")
    try:
        event = json.loads(body)
    except ValueError:
        raise InvalidRequest("the body is not JSON.") from None
    data = event.get("data") if isinstance(event, dict) else None
    if not isinstance(data, dict) or event.get("event") != "request.status.updated":
        return "ignored"
    request_id = data.get("requestId")
    if not isinstance(request_id, str) or not request_id:
        raise InvalidRequest("data.requestId is missing.", field="data.requestId")
    order = Order.objects.filter(
        status__in=WAITING_FOR_RELAY, settlement__relay__requestId=request_id
    ).first()
    if order is None:
        raise InvalidRequest(f"no order waits for relay request {request_id}.", field="data.requestId")
    enqueue_settlement(order.pk)
    return "order driven"
