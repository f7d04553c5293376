"""What a payment buys: the price of what arrived, as the relay provider quotes it now, less the service's
fee, against what the payer expected. Settlement prices a counted deposit with it; delivery on first sight
(orders/fronting.py) prices the payment seen the same way, so both deliver the same amount."""

from __future__ import annotations

from django.conf import settings

from orders.fees import fee_amount
from orders.models import Order
from orders.relays import get_relay_provider
from orders.types import EXPECTED_DST_TYPES
from orders.types import of as type_of


class Slipped(Exception):
    """What arrived buys less than the payer expected, less SETTLEMENT_SLIPPAGE_BPS."""

    def __init__(self, message: str, quoted: int) -> None:
        super().__init__(message)
        self.quoted = quoted


def priced(order: Order, received: int, relay=None) -> tuple[int, int]:
    """(what `received` of the payer's token buys as quoted now, what the order delivers for it after the
    service's fee); Slipped below the payer's expectation; QuoteRejected, ProviderUnavailable from the
    provider."""
    relay = relay or get_relay_provider()
    return judged(order, received, relay.price(order, received))


def judged(order: Order, received: int, quoted: int) -> tuple[int, int]:
    """`priced` for a quote already asked for (`quoted`: what `received` buys): the fee taken and the payer's
    expectation checked."""
    fee_bps = int((order.fee or {}).get("finalFeeBps") or 0)
    after_fee = quoted - fee_amount(quoted, fee_bps)
    if order.type in EXPECTED_DST_TYPES:
        minimum, deliver = int(order.payload.get("expectedDstAmount") or 0), after_fee
    else:
        minimum = deliver = type_of(order).price(order)
    tolerance = settings.SETTLEMENT_SLIPPAGE_BPS
    if after_fee * 10_000 < minimum * (10_000 - tolerance):
        raise Slipped(
            f"{received} received buys {after_fee} after fees, below {minimum} less {tolerance} bps", quoted
        )
    return quoted, deliver
