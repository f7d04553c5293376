"""How order creation reaches a fiat onramp: the adapter an app above registers.

The onramp app registers the real one (`onramp.adapters.OrderOnramp`, in its
`AppConfig.ready`); orders never import it. Without one, an order that names
an onramp is refused.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from core.errors import NotConfigured

if TYPE_CHECKING:
    from orders.inputs import OrderRequest


class OnrampAdapter(Protocol):
    def order_extras(
        self,
        *,
        order_id: str,
        global_address: str,
        request: OrderRequest,
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

    def order_extras(self, *, request: OrderRequest, **_: Any) -> dict[str, Any]:
        if request.onramp:
            raise NotConfigured("no fiat onramp is configured on this service.", field="onramp")
        return {}

    def refund_card(self, *, payment_intent_id: str, order_id: str) -> str:
        raise NotConfigured("no fiat onramp is configured on this service.")


_adapter: OnrampAdapter = NoOnramp()


def register_onramp(adapter: OnrampAdapter) -> None:
    """Make `adapter` the fiat onramp of order creation."""
    global _adapter
    _adapter = adapter


A = TypeVar("A", bound=type)


def onramp_adapter(cls: A) -> A:
    """Decorate the onramp app's adapter class: an instance becomes the fiat onramp of order creation when the
    module is imported (by the onramp app's `AppConfig.ready`)."""
    register_onramp(cls())
    return cls


def get_onramp_adapter() -> OnrampAdapter:
    return _adapter
