"""Posting what was recorded before the ledger existed, with a migration's historical models: the data
migrations of the ledger (deposits and outbox transactions) and of orders (fees and card payments) call
`Backfill`, so the ledger is whole from its first day. The legs are the observers' own (ledger/observed.py);
only the writing is done here, on the models as they were at that migration."""

from __future__ import annotations

from chains.keys import key_columns
from ledger.observed import Kind, order_of, outbox_legs, posting_kind
from ledger.postings import Leg, check_balanced, credit, debit

MINED, FAILED = "mined", "failed"
HANDED_OVER = ("confirmed", "orphaned", "withdrawn")


class Backfill:
    def __init__(self, apps):
        self.Account = apps.get_model("ledger", "Account")
        self.Posting = apps.get_model("ledger", "Posting")
        self.Entry = apps.get_model("ledger", "Entry")
        self.accounts: dict[tuple, object] = {}
        self.keys = set(self.Posting.objects.values_list("key", flat=True))

    def _account(self, leg: Leg):
        key = leg.account_key
        if key not in self.accounts:
            self.accounts[key], _ = self.Account.objects.get_or_create(
                chain_id=key[0], token=key[1], kind=key[2], ref=key[3]
            )
        return self.accounts[key]

    def post(self, *, key: str, kind: str, legs: list[Leg], **fields) -> bool:
        """Write one balanced posting under `key`, unless it is there; whether it was written."""
        if key in self.keys or not legs:
            return False
        check_balanced(legs)
        posting = self.Posting.objects.create(key=key, kind=kind, **fields)
        self.Entry.objects.bulk_create(
            [
                self.Entry(posting=posting, account=self._account(leg), side=leg.side, amount=leg.amount)
                for leg in legs
            ]
        )
        self.keys.add(key)
        return True

    def reverse(self, original_key: str, *, key: str, kind: str) -> bool:
        original = self.Posting.objects.filter(key=original_key).first()
        if original is None:
            return False
        flip = {"debit": "credit", "credit": "debit"}
        legs = [
            Leg(
                e.account.chain_id,
                e.account.token,
                e.account.kind,
                e.account.ref,
                flip[e.side],
                int(e.amount),
            )
            for e in self.Entry.objects.filter(posting=original).select_related("account")
        ]
        return self.post(
            key=key,
            kind=kind,
            legs=legs,
            order_id=original.order_id,
            owner=original.owner,
            tx_hash=original.tx_hash,
            chain_id=original.chain_id,
            block_number=original.block_number,
            memo=f"undoes {original_key}",
        )

    def deposits(self, Deposit) -> int:
        """Every deposit handed to its owner: posted; a withdrawn one posted and undone."""
        done = 0
        for deposit in Deposit.objects.filter(status__in=HANDED_OVER).exclude(handled_at=None).iterator():
            amount, key = int(deposit.amount), f"deposit:{deposit.pk}"
            if not amount:
                continue
            done += self.post(
                key=key,
                kind="deposit",
                legs=[
                    credit(deposit.chain_id, deposit.token, Kind.PAYER, deposit.from_address, amount),
                    debit(deposit.chain_id, deposit.token, Kind.DEPOSIT_ADDRESS, deposit.to_address, amount),
                ],
                order_id=order_of(deposit.owner),
                owner=deposit.owner,
                tx_hash=deposit.tx_hash,
                chain_id=deposit.chain_id,
                block_number=deposit.block_number,
            )
            if deposit.status == "withdrawn":
                done += self.reverse(key, key=f"{key}:withdrawn", kind="reorg")
        return done

    def outbox(self, OutboxTx, WatchedAddress) -> int:
        """Every finished outbox transaction still in its block: what its receipt's logs moved, and its gas
        where the receipt's price was kept (rows finished before it was have none: their gas shows in the
        first `reconcile` as a difference of the native coin, to adopt as what it is)."""
        done = 0
        finished = OutboxTx.objects.filter(status__in=(MINED, FAILED)).exclude(block_hash="").order_by("pk")
        for tx in finished.iterator():
            columns = key_columns(
                tx.key, tx.signer
            )  # a historical row: its key, read as chains.keys reads it
            legs = outbox_legs(
                tx,
                succeeded=tx.status == MINED,
                logs=tx.logs or [],
                gas_used=tx.gas_used,
                gas_price=tx.effective_gas_price,
                watched=WatchedAddress,
                funds=columns["funds"],
            )
            done += self.post(
                key=f"outbox:{tx.key}:{tx.block_hash}",
                kind=posting_kind(columns["step"], columns["owner"]),
                legs=legs,
                order_id=order_of(columns["owner"]),
                owner=columns["owner"],
                tx_hash=tx.tx_hash,
                chain_id=tx.chain_id,
                block_number=tx.block_number,
            )
        return done
