"""What every order type declares (`OrderType`): its family, the request shapes of its order and its quote,
which side its payer fixes, and, for a type that calls a contract, its price, its spender and its call.

- A **swap** delivers a token on the destination chain; its payer names the least that must arrive there
  (`expectedDstAmount`), and an order below it is refused before anyone pays.
- A **call** makes a contract call on the destination chain (an NFT mint, a tournament entry or its prize
  pool, any call): its price is fixed, so what arrives beyond it goes back to the payer, and it is executed
  after the delivery (the `executing` status). An exact-in call spends what arrives less the fee, so its
  payer, like a swap's, names what must arrive at least.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rest_framework import serializers

from orders.models import Order

EXACT_INPUT = "EXACT_INPUT"  # the payer's amount is fixed; what arrives follows
EXACT_OUTPUT = "EXACT_OUTPUT"  # what arrives is fixed; the payer's amount follows


class Family(StrEnum):
    SWAP = "swap"
    CALL = "call"


class ExecutionInvalid(ValueError):
    """The order's call cannot be built (an ABI or an argument that does not fit): it is refunded."""


Call = tuple[str, str, int]  # (to, calldata, value) on the destination chain


def _no_price(order: Order) -> int:
    return 0


def _no_spender(order: Order) -> str | None:
    return None


def _no_call(order: Order, dst_amount: int) -> Call:
    raise ExecutionInvalid(f"a {order.type} order makes no contract call")


@dataclass(frozen=True)
class OrderType:
    """One order type. A swap needs only its shapes and `fixes`; a call also says what it must deliver
    (`price`), who may take the token delivered (`spender`: approved before the call) and its `call`."""

    name: Order.Type
    family: Family
    meaning: str
    payload: type[serializers.Serializer]  # POST /orders `payload`
    quote: type[serializers.Serializer]  # POST /orders/quote
    fixes: Callable[[Mapping[str, Any]], tuple[str, int]]  # the validated quote: (trade type, amount)
    exact_in: bool = (
        False  # the payer names what must arrive at least (swaps; a call that spends what arrives)
    )
    amount_field: str = "amount"  # the wire field of the fixed amount, named in a refusal
    needs_nft: bool = False  # its order's metadata must describe the NFT (`metadata.nft`)
    price: Callable[[Order], int] = (
        _no_price  # what a fixed-price call must deliver, in the dst token's units
    )
    spender: Callable[[Order], str | None] = _no_spender
    call: Callable[[Order, int], Call] = _no_call  # its call, given what was delivered

    @property
    def calls_contract(self) -> bool:
        return self.family is Family.CALL
