"""Every order type, declared once, by a module per family: `swaps` (swap, x402_swap, duel), `calls` (custom,
custom_exact_in), `nft` (mint_nft) and `tournaments` (join_tournament, fund_tournament), each an `OrderType`
(orders.types.base): its request shapes, the side its payer fixes, and for a call its price, spender and call.

The rest of the orders app asks this registry (`of(order)`, `TYPES`), and the sets it asks about (`SWAP_TYPES`,
`CALLS_CONTRACT`, `EXPECTED_DST_TYPES`, `AMOUNT_FIELDS`) are computed from it; a test checks that every
`Order.Type` has one. A ninth type is a module here (or a declaration in its family's), its `Order.Type` member
and that enum's migration.
"""

from __future__ import annotations

from orders.models import Order
from orders.types import calls, nft, swaps, tournaments
from orders.types.base import EXACT_INPUT, EXACT_OUTPUT, ExecutionInvalid, Family, OrderType

TYPES: dict[str, OrderType] = {
    kind.name.value: kind for family in (swaps, calls, nft, tournaments) for kind in family.TYPES
}

SWAP_TYPES = frozenset(name for name, kind in TYPES.items() if kind.family is Family.SWAP)
CALLS_CONTRACT = frozenset(name for name, kind in TYPES.items() if kind.family is Family.CALL)
EXPECTED_DST_TYPES = frozenset(name for name, kind in TYPES.items() if kind.exact_in)
# The wire field that carries the fixed amount, for the types whose field is not `amount` (named in a refusal).
AMOUNT_FIELDS = {name: kind.amount_field for name, kind in TYPES.items() if kind.amount_field != "amount"}


def camel(name: str) -> str:
    """An order type's name in the OpenAPI schema's components: `mint_nft` is `MintNft`."""
    return "".join(part.capitalize() for part in name.split("_"))


def of(order: Order) -> OrderType:
    """The declaration of `order`'s type."""
    return TYPES[order.type]


__all__ = [
    "AMOUNT_FIELDS",
    "CALLS_CONTRACT",
    "EXACT_INPUT",
    "EXACT_OUTPUT",
    "EXPECTED_DST_TYPES",
    "SWAP_TYPES",
    "TYPES",
    "ExecutionInvalid",
    "Family",
    "OrderType",
    "camel",
    "of",
]
