"""Reads of the order interface."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import CharField, F, Q, QuerySet, Value

from chains.evm import is_address, to_checksum_address
from chains.models import Token
from core.dbfields import Uint256Field
from core.errors import InvalidRequest
from orders.models import DepositTx, Order, RefundTx, RelayTx


def payment_seen(order: Order) -> tuple[str | None, str | None]:
    """(sender, transaction hash) of the order's payment: its first deposit, or, for an order executed on first
    sight of its payment before the deposit was counted (orders.fronting), the payment seen."""
    first = order.deposit_txs.order_by("pk").values_list("from_address", "tx_hash").first()
    if first is not None:
        return first[0], first[1]
    seen = (order.settlement or {}).get("onSight") or {}
    return seen.get("from") or None, seen.get("txHash") or None


def parse_uuid(value: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidRequest(f"must be a UUID, got '{value}'.", field=what) from None


@dataclass(frozen=True)
class TransactionRow:
    kind: str  # "deposit", "relay" or "refund"
    chain: int
    tx_hash: str
    created_at: datetime
    amount: int | None = None  # deposits and refunds
    status: str | None = None  # relays and refunds
    from_address: str | None = None  # deposits


@dataclass(frozen=True)
class OrderWithTransactions:
    order: Order
    deposits: list[TransactionRow] = field(default_factory=list)
    relays: list[TransactionRow] = field(default_factory=list)
    refunds: list[TransactionRow] = field(default_factory=list)


_TX_COLUMNS = ("kind", "chain", "tx_hash", "created_at", "amount", "status", "from_address")


def _transactions(model, order_id: uuid.UUID, kind: str, **columns) -> QuerySet:
    text, amount = (
        Value(None, output_field=CharField()),
        Value(None, output_field=Uint256Field()),
    )
    defaults = {"amount": amount, "status": text, "from_address": text}
    return (
        model.objects.filter(order_id=order_id)
        .order_by()
        .annotate(kind=Value(kind), c_chain=F("chain"), c_tx_hash=F("tx_hash"), c_created_at=F("created_at"))
        .annotate(pk_=F("pk"), **{f"c_{name}": columns.get(name, defaults[name]) for name in defaults})
        .values_list("kind", *(f"c_{name}" for name in _TX_COLUMNS[1:]), "pk_")
    )


def order_with_transactions(order_id: uuid.UUID) -> OrderWithTransactions | None:
    """The order and its deposit, relay and refund transactions: two queries (one UNION ALL for the three)."""
    order = Order.objects.filter(pk=order_id).first()
    if order is None:
        return None
    rows = (
        _transactions(DepositTx, order.pk, "deposit", amount=F("amount"), from_address=F("from_address"))
        .union(
            _transactions(RelayTx, order.pk, "relay", status=F("status")),
            _transactions(RefundTx, order.pk, "refund", amount=F("amount"), status=F("status")),
            all=True,
        )
        .order_by("c_created_at", "pk_")
    )
    found = OrderWithTransactions(order=order)
    by_kind = {"deposit": found.deposits, "relay": found.relays, "refund": found.refunds}
    for row in rows:
        by_kind[row[0]].append(TransactionRow(**dict(zip(_TX_COLUMNS, row[:-1], strict=True))))
    return found


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


def refund_target(order: Order, deposit: DepositTx) -> str:
    """Where a deposit's refund goes: its sender; for a deposit seen by balance (a contract wallet's internal
    payment, no sender known), the order's refundAddress, else the address staff entered; '' when none."""
    return deposit.from_address or order.refund_address or deposit.refund_to or ""
