"""Every order type, declared once: which family it belongs to and what its payer fixes. The sets the rest of
the orders app asks about (`SWAP_TYPES`, `CALLS_CONTRACT`, `EXPECTED_DST_TYPES`) are computed from this
table, and a test checks that every `Order.Type` has a row here and an entry in each table keyed by type (the
payload and quote serializers, the fixed amount's wire field).

- A **swap** delivers a token on the destination chain; its payer names the least that must arrive there
  (`expectedDstAmount`), and an order below it is refused before anyone pays.
- A **call** makes a contract call on the destination chain (an NFT mint, a tournament entry or its prize
  pool, any call): its price is fixed, so what arrives beyond it goes back to the payer, and it is executed
  after the delivery (the `executing` status). An exact-in call spends what arrives less the fee, so its
  payer, like a swap's, names what must arrive at least.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from orders.models import Order


class Family(StrEnum):
    SWAP = "swap"
    CALL = "call"


@dataclass(frozen=True)
class OrderType:
    family: Family
    exact_in: bool = (
        False  # the payer names what must arrive at least (swaps; a call that spends what arrives)
    )
    meaning: str = ""


T = Order.Type
TYPES: dict[str, OrderType] = {
    T.SWAP: OrderType(Family.SWAP, exact_in=True, meaning="a token delivered on the destination chain"),
    T.X402_SWAP: OrderType(Family.SWAP, exact_in=True, meaning="a swap paid by an x402 authorization"),
    T.DUEL: OrderType(Family.SWAP, exact_in=True, meaning="a swap whose recipient is a duel's escrow"),
    T.CUSTOM: OrderType(Family.CALL, meaning="any contract call, for a fixed amount"),
    T.CUSTOM_EXACT_IN: OrderType(Family.CALL, exact_in=True, meaning="any call spending what arrives"),
    T.MINT_NFT: OrderType(Family.CALL, meaning="an ERC-721 minted to the recipient, at its price"),
    T.JOIN_TOURNAMENT: OrderType(Family.CALL, meaning="the recipient entered in a tournament, at its price"),
    T.FUND_TOURNAMENT: OrderType(Family.CALL, meaning="an amount into a tournament's prize pool"),
}

SWAP_TYPES = frozenset(name for name, kind in TYPES.items() if kind.family is Family.SWAP)
CALLS_CONTRACT = frozenset(name for name, kind in TYPES.items() if kind.family is Family.CALL)
EXPECTED_DST_TYPES = frozenset(name for name, kind in TYPES.items() if kind.exact_in)
