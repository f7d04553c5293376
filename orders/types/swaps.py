"""The swaps: a token delivered on the destination chain, of which the payer names the least that must arrive
(`expectedDstAmount`). A plain swap says which side its amount fixes; an x402 swap and a duel fix what arrives
(the merchant's price, the duel's stake)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from orders.models import Order
from orders.serializers.common import TokenAmountField
from orders.serializers.requests import TRADE_TYPES, AmountQuote, QuoteCommonSerializer
from orders.types.base import EXACT_OUTPUT, Family, OrderType


class ExpectedDstPayload(serializers.Serializer):
    expectedDstAmount = TokenAmountField(allow_zero=True)


class SwapQuote(QuoteCommonSerializer):
    tradeType = serializers.ChoiceField(choices=TRADE_TYPES)
    amount = TokenAmountField()


def _as_asked(data: Mapping[str, Any]) -> tuple[str, int]:
    return data["tradeType"], int(data["amount"])


def _what_arrives(data: Mapping[str, Any]) -> tuple[str, int]:
    return EXACT_OUTPUT, int(data["amount"])


def _swap(name: Order.Type, meaning: str, quote: type[serializers.Serializer], fixes) -> OrderType:
    return OrderType(
        name=name,
        family=Family.SWAP,
        meaning=meaning,
        payload=ExpectedDstPayload,
        quote=quote,
        fixes=fixes,
        exact_in=True,
    )


SWAP = _swap(Order.Type.SWAP, "a token delivered on the destination chain", SwapQuote, _as_asked)
X402_SWAP = _swap(Order.Type.X402_SWAP, "a swap paid by an x402 authorization", AmountQuote, _what_arrives)
DUEL = _swap(Order.Type.DUEL, "a swap whose recipient is a duel's escrow", AmountQuote, _what_arrives)
TYPES = (SWAP, X402_SWAP, DUEL)
