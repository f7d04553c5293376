"""The one way into the ledger: `post`, called by the service that caused a movement, in that service's
transaction, so the state change and its posting are written together or not at all."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from ledger.models import Account, Entry, Posting


class Unbalanced(ValueError):
    """A posting whose debits and credits differ for some chain and token: refused, nothing written."""


@dataclass(frozen=True)
class Leg:
    """One side of a posting: `amount` base units into (`debit`) or out of (`credit`) an account."""

    chain_id: int
    token: str
    kind: str
    ref: str
    side: str
    amount: int


def debit(chain_id: int, token: str, kind: str, ref: str, amount: int) -> Leg:
    return Leg(chain_id, token.lower(), kind, ref.lower(), Entry.Side.DEBIT, amount)


def credit(chain_id: int, token: str, kind: str, ref: str, amount: int) -> Leg:
    return Leg(chain_id, token.lower(), kind, ref.lower(), Entry.Side.CREDIT, amount)


def check_balanced(legs: list[Leg]) -> None:
    if len(legs) < 2:
        raise Unbalanced("A posting has two sides at least.")
    totals: dict[tuple[int, str], int] = defaultdict(int)
    for leg in legs:
        if leg.side not in Entry.Side.values or type(leg.amount) is not int or leg.amount <= 0:
            raise Unbalanced(f"{leg}: a leg moves a positive whole amount, in or out.")
        totals[(leg.chain_id, leg.token)] += leg.amount if leg.side == Entry.Side.DEBIT else -leg.amount
    off = {f"{token} on {chain}": total for (chain, token), total in totals.items() if total}
    if off:
        raise Unbalanced(f"Debits and credits differ: {off}.")


def _account(leg: Leg) -> Account:
    found = Account.objects.filter(chain_id=leg.chain_id, token=leg.token, kind=leg.kind, ref=leg.ref).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return Account.objects.create(chain_id=leg.chain_id, token=leg.token, kind=leg.kind, ref=leg.ref)
    except IntegrityError:  # another transaction opened it first
        return Account.objects.get(chain_id=leg.chain_id, token=leg.token, kind=leg.kind, ref=leg.ref)


@transaction.atomic
def post(
    *, key: str, kind: str, legs: list[Leg], order_id=None, owner: str = "", tx_hash: str = ""
) -> Posting:
    """Record one movement under its business key, once: a second call with the key returns the first
    posting and writes nothing. An unbalanced posting raises `Unbalanced` before anything is written."""
    check_balanced(legs)
    existing = Posting.objects.filter(key=key).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            posting = Posting.objects.create(
                key=key, kind=kind, order_id=order_id, owner=owner, tx_hash=tx_hash
            )
    except IntegrityError:  # the same step, posted by another worker meanwhile
        return Posting.objects.get(key=key)
    Entry.objects.bulk_create(
        Entry(posting=posting, account=_account(leg), side=leg.side, amount=leg.amount) for leg in legs
    )
    return posting


def account_balance(account: Account) -> int:
    """Debits less credits, exact (summed here: SQLite's SUM of a uint256 column is a float)."""
    total = 0
    for side, amount in Entry.objects.filter(account=account).values_list("side", "amount"):
        total += amount if side == Entry.Side.DEBIT else -amount
    return total
