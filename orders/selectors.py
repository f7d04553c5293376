"""Reads of the order interface."""

from __future__ import annotations

import uuid

from django.db.models import Q, QuerySet

from orders.envelope import OrderError
from orders.evm import is_address, to_checksum_address
from orders.models import CheckoutSession, Order, Token


def parse_uuid(value: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise OrderError(f"{what} must be a UUID, got '{value}'.") from None


def checkout_session_get(session_id: uuid.UUID) -> CheckoutSession | None:
    return CheckoutSession.objects.filter(pk=session_id).first()


def order_with_transactions(order_id: uuid.UUID) -> Order | None:
    return (
        Order.objects.select_related("checkout_session")
        .prefetch_related("deposit_txs", "relay_txs", "refund_txs")
        .filter(pk=order_id)
        .first()
    )


def orders_by_creator(*, creator_address: str, limit: int, offset: int) -> list[Order]:
    return list(
        Order.objects.filter(creator_address=creator_address.lower()).order_by("-created_at", "-id")[
            offset : offset + limit
        ]
    )


def tokens_on_chain(*, chain_id: int, term: str | None, limit: int) -> QuerySet[Token]:
    tokens = Token.objects.filter(chain_id=chain_id)
    if term:
        if is_address(term):
            tokens = tokens.filter(address=to_checksum_address(term))
        else:
            tokens = tokens.filter(Q(symbol__icontains=term) | Q(name__icontains=term))
    return tokens.order_by("symbol", "address")[:limit]


def order_for_session(session_id: uuid.UUID) -> Order | None:
    return Order.objects.filter(checkout_session_id=session_id).first()
