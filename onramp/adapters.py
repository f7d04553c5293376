"""The onramp app's side of order creation (see `orders.onramps`)."""

from __future__ import annotations

from typing import Any

from onramp.services import onramp_extras
from onramp.vendor_b import VendorBClient
from orders.onramps import onramp_adapter


@onramp_adapter
class OrderOnramp:
    """vendorA (session URLs) and vendorB-web2 (a card payment intent) for orders that name them."""

    def order_extras(self, **order: Any) -> dict[str, Any]:
        return onramp_extras(**order)

    def refund_card(self, *, payment_intent_id: str, order_id: str) -> str:
        return VendorBClient().refund(payment_intent_id=payment_intent_id, order_id=order_id)
