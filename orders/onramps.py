"""How order creation reaches a fiat onramp: an adapter chosen by `ORDER_ONRAMP_ADAPTER`.

The onramp app provides the real one (`onramp.adapters.OrderOnramp`); orders
never import it. Without one, an order that names an onramp is refused.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from core.errors import NotConfigured


class OnrampAdapter(Protocol):
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
        """What the order's onramp vendor adds to it (URLs, payment intent, status, fee); may call the vendor."""
        ...

    def refund_card(self, *, payment_intent_id: str, order_id: str) -> str:
        """Refund a card payment in full with its vendor; the refund's id. Raises a DomainError if it cannot."""
        ...


class NoOnramp:
    """No onramp on this deployment: orders without one pass, orders with one are refused."""

    def order_extras(self, *, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        if data.get("onramp"):
            raise NotConfigured("no fiat onramp is configured on this service.", field="onramp")
        return {}

    def refund_card(self, *, payment_intent_id: str, order_id: str) -> str:
        raise NotConfigured("no fiat onramp is configured on this service.")


def get_onramp_adapter() -> OnrampAdapter:
    return import_string(settings.ORDER_ONRAMP_ADAPTER)()
