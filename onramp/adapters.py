"""The onramp app's side of order creation (see `orders.onramps`)."""

from __future__ import annotations

from typing import Any

from onramp.services import onramp_extras


class OrderOnramp:
    """vendorA (session URLs) and vendorB-web2 (a card payment intent) for orders that name them."""

    def order_extras(self, **order: Any) -> dict[str, Any]:
        return onramp_extras(**order)
