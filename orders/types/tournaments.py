"""A tournament's contract: the recipient entered at its entry price (`join_tournament`), or an amount paid
into its prize pool (`fund_tournament`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eth_utils import to_checksum_address
from rest_framework import serializers

from chains.artifacts import encode_call
from orders.models import Order
from orders.serializers.common import AddressField, TokenAmountField
from orders.serializers.requests import QuoteCommonSerializer
from orders.types.base import EXACT_OUTPUT, Call, Family, OrderType


class JoinTournamentPayload(serializers.Serializer):
    contractAddress = AddressField()
    entryPrice = TokenAmountField(allow_zero=True)


class FundTournamentPayload(serializers.Serializer):
    contractAddress = AddressField()
    fundAmount = TokenAmountField()


class JoinTournamentQuote(QuoteCommonSerializer):
    contractAddress = AddressField()
    price = TokenAmountField()


class FundTournamentQuote(QuoteCommonSerializer):
    contractAddress = AddressField()
    fundAmount = TokenAmountField()


def _tournament(order: Order) -> str:
    return order.payload["contractAddress"]


def _join(order: Order, dst_amount: int) -> Call:
    return (
        _tournament(order),
        encode_call("Tournament", "join", to_checksum_address(order.recipient_address)),
        0,
    )


def _fund(order: Order, dst_amount: int) -> Call:
    return _tournament(order), encode_call("Tournament", "fund", dst_amount), 0


def _entry(data: Mapping[str, Any]) -> tuple[str, int]:
    return EXACT_OUTPUT, int(data["price"])


def _funding(data: Mapping[str, Any]) -> tuple[str, int]:
    return EXACT_OUTPUT, int(data["fundAmount"])


JOIN_TOURNAMENT = OrderType(
    name=Order.Type.JOIN_TOURNAMENT,
    family=Family.CALL,
    meaning="the recipient entered in a tournament, at its price",
    payload=JoinTournamentPayload,
    quote=JoinTournamentQuote,
    fixes=_entry,
    amount_field="price",
    price=lambda order: int(order.payload["entryPrice"]),
    spender=_tournament,
    call=_join,
)
FUND_TOURNAMENT = OrderType(
    name=Order.Type.FUND_TOURNAMENT,
    family=Family.CALL,
    meaning="an amount into a tournament's prize pool",
    payload=FundTournamentPayload,
    quote=FundTournamentQuote,
    fixes=_funding,
    amount_field="fundAmount",
    price=lambda order: int(order.payload["fundAmount"]),
    spender=_tournament,
    call=_fund,
)
TYPES = (JOIN_TOURNAMENT, FUND_TOURNAMENT)
