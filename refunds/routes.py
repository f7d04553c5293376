"""What a refund to another chain or token would deliver, as quoted now: the least the payer receives, and
the refusal (naming `destination`) where the service cannot deliver there. Asked when a refund is made
(refunds.services) and when its order is (refunds.crosschain)."""

from __future__ import annotations

from core.errors import DomainError, InvalidRequest
from orders.inputs import EXACT_INPUT, QuoteInput
from orders.services import quote_build

ORDER_TYPE = "swap"


def quote_least(*, chain_id: int, token: str, amount: int, dst_chain: int, dst_token: str, to: str) -> int:
    """The least the payer receives for `amount`, the service's fee taken, as quoted now."""
    quote, _ = quote_build(
        QuoteInput(
            type=ORDER_TYPE,
            trade_type=EXACT_INPUT,
            amount=amount,
            src_chain=chain_id,
            dst_chain=dst_chain,
            src_token_address=token,
            dst_token_address=dst_token,
            recipient_address=to,
        )
    )
    out = quote["currencyOut"]
    return int(out.get("minimumAmount") or out["amount"])


def route_check(*, chain_id: int, token: str, amount: int, dst_chain: int, dst_token: str, to: str) -> int:
    """What the payer would receive now; a 400 naming `destination` when the service cannot deliver there."""
    try:
        least = quote_least(
            chain_id=chain_id, token=token, amount=amount, dst_chain=dst_chain, dst_token=dst_token, to=to
        )
    except DomainError as exc:
        raise InvalidRequest(
            f"the refund cannot be delivered there: {exc.message}", field="destination"
        ) from exc
    if least <= 0:
        raise InvalidRequest(
            "the refund is too small to deliver there once the fee is taken.", field="amount"
        )
    return least
