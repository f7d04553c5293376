"""The onramp app's side of order creation (see `orders.onramps`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from onramp.services import onramp_extras


class OrderOnramp:
    """vendorA (session URLs) and vendorB-web2 (a card payment intent) for orders that name them."""

    def order_extras(
        self,
        *,
        order_id: str,
        global_address: str,
        data: dict[str, Any],
        payer_ip: str,
        usd_value: Decimal,
        recipient_balance: int,
    ) -> dict[str, Any]:
        return onramp_extras(
            order_id=order_id,
            global_address=global_address,
            data=data,
            payer_ip=payer_ip,
            usd_value=usd_value,
            recipient_balance=recipient_balance,
        )
