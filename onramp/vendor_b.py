"""vendorB adapter: card payment intents over its form-encoded HTTP API."""

from __future__ import annotations

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
        data = vendor_json(
            VENDOR,
            lambda: self.session.post(
                f"{self.api_url}/v1/payment_intents",
                data=form,
                headers={
                    "Authorization": f"Bearer {settings.VENDOR_B_SECRET_KEY}",
                    "Idempotency-Key": f"order-{order_id}",
                },
                timeout=settings.PROVIDER_TIMEOUT_SECONDS,
                allow_redirects=False,
            ),
            lambda body: (body.get("error") or {}).get("message"),
        )
        if not isinstance(data, dict) or not data.get("id"):
            raise vendor_unavailable(VENDOR)
        return str(data["id"])
