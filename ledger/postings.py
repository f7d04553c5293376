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

    @property
    def account_key(self) -> tuple[int, str, str, str]:
        return (self.chain_id, self.token, self.kind, self.ref)


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


def _accounts(legs: list[Leg]) -> dict[tuple, Account]:
    """The legs' accounts, read in one query; those missing opened in one insert that skips any another
    transaction opened meanwhile (the unique account), then read in one more."""
    wanted = {leg.account_key for leg in legs}

    def read() -> dict[tuple, Account]:
        return {
            (a.chain_id, a.token, a.kind, a.ref): a
            for a in Account.objects.filter(
                chain_id__in={k[0] for k in wanted},
                token__in={k[1] for k in wanted},
                ref__in={k[3] for k in wanted},
            )
        }

    found = read()
    missing = wanted - found.keys()
    if missing:
        Account.objects.bulk_create(
            [Account(chain_id=c, token=t, kind=k, ref=r) for c, t, k, r in sorted(missing)],
            ignore_conflicts=True,
        )
        found = read()
    return found


@transaction.atomic
def post(
    *,
    key: str,
    kind: str,
    legs: list[Leg],
    order_id=None,
    owner: str = "",
    tx_hash: str = "",
    chain_id: int | None = None,
    block_number: int | None = None,
    memo: str = "",
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
                key=key,
                kind=kind,
                order_id=order_id,
                owner=owner,
                tx_hash=tx_hash,
                chain_id=chain_id,
                block_number=block_number,
                memo=memo[:500],
            )
    except IntegrityError:  # the same step, posted by another worker meanwhile
        return Posting.objects.get(key=key)
    accounts = _accounts(legs)
    Entry.objects.bulk_create(
        Entry(posting=posting, account=accounts[leg.account_key], side=leg.side, amount=leg.amount)
        for leg in legs
    )
    return posting


def reverse(original_key: str, *, key: str, kind: str, memo: str = "") -> Posting | None:
    """A posting that undoes `original_key`'s (every entry on the other side), under its own key: how the
    ledger corrects itself. None when there is nothing to undo."""
    original = Posting.objects.filter(key=original_key).first()
    if original is None:
        return None
    flip = {Entry.Side.DEBIT: Entry.Side.CREDIT, Entry.Side.CREDIT: Entry.Side.DEBIT}
    legs = [
        Leg(e.account.chain_id, e.account.token, e.account.kind, e.account.ref, flip[e.side], e.amount)
        for e in original.entries.select_related("account")
    ]
    return post(
        key=key,
        kind=kind,
        legs=legs,
        order_id=original.order_id,
        owner=original.owner,
        tx_hash=original.tx_hash,
        chain_id=original.chain_id,
        block_number=original.block_number,
        memo=memo or f"undoes {original_key}",
    )


def account_balance(account: Account) -> int:
    """Debits less credits, exact (summed here: SQLite's SUM of a uint256 column is a float)."""
    total = 0
    for side, amount in Entry.objects.filter(account=account).values_list("side", "amount"):
        total += amount if side == Entry.Side.DEBIT else -amount
    return total
