"""The merchant's balance transactions (ledger.models.BalanceTransaction): the ledger writes every row, once
per business key, in the transaction of the change.

Payment kinds (a link's or session's payment, a quick payment) do not write rows: they tell the ledger what
happened, as facts (`PaymentSettled`: a payment reached the merchant; `PaymentRefunded`: money went back to a
payer), through `balance_payment_settled` / `balance_payment_refunded`. The ledger decides the row: its key,
type, direction, what counts as net, and which postings back it. Staff adjustments (`manage.py
balance_adjust`) go through `balance_record` directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from ledger.models import BalanceTransaction, Posting

Type = BalanceTransaction.Type


def postings_of(*, order_id=None, owner: str = "") -> list[str]:
    """The keys of the ledger postings of an order (or of another owner, `quickpay:<id>`), oldest first."""
    rows = Posting.objects.filter(order_id=order_id) if order_id else Posting.objects.filter(owner=owner)
    return list(rows.order_by("pk").values_list("key", flat=True))


def balance_record(
    *,
    key: str,
    organization_id: str,
    type: str,
    chain_id: int,
    token_address: str,
    gross: int,
    fee: int = 0,
    net: int | None = None,
    sign: int = 1,
    source_id: str,
    tx_hashes: Iterable[tuple[str, int, str]] = (),
    posting_keys: Iterable[str] = (),
    **refs,
) -> BalanceTransaction:
    """The row for `key`: created once; the same key again returns the first row and writes nothing."""
    existing = BalanceTransaction.objects.filter(key=key).first()
    if existing is not None:
        return existing
    if gross < 0 or fee < 0 or (net is not None and net < 0) or sign not in (1, -1):
        raise ValueError("balance amounts are unsigned; `sign` gives the direction")
    try:
        with transaction.atomic():
            return BalanceTransaction.objects.create(
                key=key,
                organization_id=organization_id,
                type=type,
                sign=sign,
                chain_id=chain_id,
                token_address=token_address,
                gross=gross,
                fee=fee,
                net=gross - fee if net is None else net,
                source_id=source_id,
                tx_hashes=[
                    {"role": role, "chain_id": chain, "tx_hash": tx_hash}
                    for role, chain, tx_hash in tx_hashes
                    if tx_hash
                ],
                posting_keys=list(posting_keys),
                **refs,
            )
    except IntegrityError:  # recorded by another worker meanwhile
        return BalanceTransaction.objects.get(key=key)


@dataclass(frozen=True)
class PaymentSettled:
    """A payment of the merchant's completed: `gross` is what it bought in the token and on the chain the merchant
    is paid in, `net` what reached their address (the rest is the service's fee)."""

    organization_id: str
    payment_id: str  # the payment's public id (`txn_…`, `qp_…`): the row's source
    chain_id: int
    token_address: str
    gross: int
    net: int
    tx_hashes: Sequence[tuple[str, int, str]]  # (role, chain id, hash)
    posting_keys: Sequence[str]  # the ledger postings that moved it (postings_of)
    description: str
    # order_id, payment_link_id, session_id, transaction_id: what the row links to
    refs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PaymentRefunded:
    """Money went back to a payer of the merchant's payment (one refund mined): it never reached the merchant."""

    organization_id: str
    payment_id: str
    refund_id: str  # what makes this refund one of a kind (a refund's row, an outbox key)
    chain_id: int
    token_address: str
    amount: int
    tx_hash: str
    posting_keys: Sequence[str]
    description: str
    refs: Mapping[str, Any] = field(default_factory=dict)


def balance_payment_settled(fact: PaymentSettled) -> BalanceTransaction:
    """The `payment` row of a completed payment (once, whatever is told twice)."""
    if fact.net > fact.gross:
        raise ValueError("a payment cannot deliver more than it bought")
    return balance_record(
        key=f"payment:{fact.payment_id}",
        organization_id=fact.organization_id,
        type=Type.PAYMENT,
        chain_id=fact.chain_id,
        token_address=fact.token_address,
        gross=fact.gross,
        fee=fact.gross - fact.net,
        net=fact.net,
        source_id=fact.payment_id,
        tx_hashes=fact.tx_hashes,
        posting_keys=fact.posting_keys,
        description=fact.description,
        **fact.refs,
    )


def balance_payment_refunded(fact: PaymentRefunded) -> BalanceTransaction:
    """The `refund` row of one refund to a payer: out of the balance's view, net 0 (it never arrived)."""
    return balance_record(
        key=f"refund:{fact.refund_id}",
        organization_id=fact.organization_id,
        type=Type.REFUND,
        sign=-1,
        chain_id=fact.chain_id,
        token_address=fact.token_address,
        gross=fact.amount,
        net=0,
        source_id=fact.payment_id,
        tx_hashes=[("refund", fact.chain_id, fact.tx_hash)],
        posting_keys=fact.posting_keys,
        description=fact.description,
        **fact.refs,
    )


@dataclass(frozen=True)
class MerchantRefunded:
    """A merchant's refund reached the payer: the merchant funded it, so their balance moves by all of it."""

    organization_id: str
    payment_id: str
    refund_id: str  # `re_…`
    chain_id: int
    token_address: str
    amount: int
    tx_hashes: Sequence[tuple[str, int, str]]  # (funding | delivery, chain id, hash)
    description: str


def balance_merchant_refunded(fact: MerchantRefunded) -> BalanceTransaction:
    """The `refund` row of a merchant's refund (once per refund): negative, net all of it."""
    return balance_record(
        key=f"merchant_refund:{fact.refund_id}",
        organization_id=fact.organization_id,
        type=Type.REFUND,
        sign=-1,
        chain_id=fact.chain_id,
        token_address=fact.token_address,
        gross=fact.amount,
        net=fact.amount,
        source_id=fact.payment_id,
        tx_hashes=fact.tx_hashes,
        posting_keys=postings_of(owner=f"refund:{fact.refund_id}"),
        description=fact.description,
    )


@dataclass(frozen=True)
class RefundBalanceToppedUp:
    """A deposit to a refund balance top-up reached the vault: the organization's refund balance grew by it."""

    organization_id: str
    top_up_id: str
    deposit_id: int
    chain_id: int
    token_address: str
    amount: int
    tx_hashes: Sequence[tuple[str, int, str]]


def balance_refund_topped_up(fact: RefundBalanceToppedUp) -> BalanceTransaction:
    """The `refund_balance` row of one top-up deposit (once per deposit)."""
    return balance_record(
        key=f"refund_balance:{fact.top_up_id}:{fact.deposit_id}",
        organization_id=fact.organization_id,
        type=Type.REFUND_BALANCE,
        chain_id=fact.chain_id,
        token_address=fact.token_address,
        gross=fact.amount,
        source_id=fact.top_up_id,
        tx_hashes=fact.tx_hashes,
        posting_keys=postings_of(owner=f"refund:{fact.top_up_id}"),
        description=f"refund balance top-up {fact.top_up_id}",
    )


@dataclass(frozen=True)
class RefundBalanceWithdrawn:
    """What an admin withdrew from the refund balance reached the address they confirmed."""

    organization_id: str
    withdrawal_id: str
    chain_id: int
    token_address: str
    amount: int
    tx_hash: str


def balance_refund_withdrawn(fact: RefundBalanceWithdrawn) -> BalanceTransaction:
    """The negative `refund_balance` row of a withdrawal (once per withdrawal)."""
    return balance_record(
        key=f"refund_balance:{fact.withdrawal_id}",
        organization_id=fact.organization_id,
        type=Type.REFUND_BALANCE,
        sign=-1,
        chain_id=fact.chain_id,
        token_address=fact.token_address,
        gross=fact.amount,
        source_id=fact.withdrawal_id,
        tx_hashes=[("withdrawal", fact.chain_id, fact.tx_hash)],
        posting_keys=postings_of(owner=f"refund:{fact.withdrawal_id}"),
        description=f"refund balance withdrawal {fact.withdrawal_id}",
    )
