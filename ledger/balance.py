"""Recording a merchant's balance transactions (ledger.models.BalanceTransaction), once per business key, by
the app that owns the payment, in the transaction of the change."""

from __future__ import annotations

from collections.abc import Iterable

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
