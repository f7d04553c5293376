"""The ledger: an append-only, double-entry record of every movement of value, per chain and token.

An `Account` is where value sits on one chain in one token: a deposit address, the vault, the solver, the
fees earned, the gas spent, a payer (owed a refund) or a recipient (owed a delivery). A `Posting` is one
movement, named by a business key (the same step retried, or replayed after a crash, posts once), and its
`Entry` rows debit and credit accounts by exact amounts in base units: in each posting the debits equal the
credits for every (chain, token). Rows are never updated or deleted; a correction is a new posting.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.dbfields import Uint256Field


class AppendOnly(Exception):
    """A ledger row was about to change or go: the ledger is corrected by a new posting, never edited."""


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnly(f"{self.model.__name__} rows are never updated.")

    def delete(self):
        raise AppendOnly(f"{self.model.__name__} rows are never deleted.")


class AppendOnlyModel(models.Model):
    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnly(f"{type(self).__name__} rows are never updated.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly(f"{type(self).__name__} rows are never deleted.")


class Account(models.Model):
    class Kind(models.TextChoices):
        DEPOSIT_ADDRESS = "deposit_address"  # ref: the address
        VAULT = "vault"  # ref: the address
        SOLVER = "solver"  # ref: the address
        FEES = "fees"  # the service's fees earned
        GAS = "gas"  # what the service's own transactions burned
        PAYER = "payer"  # ref: the payer's address (refunds)
        RECIPIENT = "recipient"  # ref: the recipient's address (deliveries)
        CARD = "card"  # a card vendor's settlement (vendorB)
        OPERATOR = "operator"  # the operator's own funds: opening balances, top-ups, staff's adjustments
        LOSS = "loss"  # ref: "front:<order>": a delivery made on first sight whose payment never confirmed

    chain_id = models.PositiveBigIntegerField()
    token = models.CharField(
        max_length=42, help_text="The token's address; the zero address for the native coin."
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    ref = models.CharField(max_length=100, blank=True, help_text="Which one of its kind: an address, mostly.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chain_id", "token", "kind", "ref"], name="ledger_account_unique")
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.ref or '-'} ({self.token} on {self.chain_id})"


class Posting(AppendOnlyModel):
    key = models.CharField(max_length=200, unique=True, help_text="The business key: one posting per key.")
    kind = models.CharField(
        max_length=40, help_text="What moved: deposit, sweep, fee, delivery, refund, gas..."
    )
    order_id = models.UUIDField(null=True, blank=True, db_index=True)
    owner = models.CharField(
        max_length=100, blank=True, db_index=True, help_text="Who it is for, as chains names it."
    )
    tx_hash = models.CharField(max_length=66, blank=True)
    chain_id = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="The chain whose block carries the movement; empty off chain."
    )
    block_number = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="The block that carries it: `reconcile` at block N counts what is at or below N. Empty for "
        "what the service decides off chain (a fee earned), which moves nothing between addresses.",
    )
    memo = models.CharField(max_length=500, blank=True, help_text="Why, for a correction or an adjustment.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        indexes = [models.Index(fields=["kind", "created_at"], name="ledger_posting_kind_created")]

    def __str__(self) -> str:
        return self.key


class Entry(AppendOnlyModel):
    class Side(models.TextChoices):
        DEBIT = "debit"  # value arrives in the account
        CREDIT = "credit"  # value leaves the account

    posting = models.ForeignKey(Posting, on_delete=models.PROTECT, related_name="entries")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="entries")
    side = models.CharField(max_length=6, choices=Side.choices)
    amount = Uint256Field(help_text="In base units of the account's token; never zero.")

    class Meta:
        verbose_name_plural = "entries"
        indexes = [models.Index(fields=["account", "posting"], name="ledger_entry_account")]

    def __str__(self) -> str:
        return f"{self.side} {self.amount} {self.account}"


class ReconcileRun(models.Model):
    """One comparison of what the ledger says the service's addresses hold on a chain with what they hold at
    one block (`manage.py reconcile`, hourly). Its rows are kept as printed."""

    chain_id = models.PositiveBigIntegerField()
    block_number = models.BigIntegerField(null=True, blank=True)
    block_hash = models.CharField(max_length=66, blank=True)
    rows = models.JSONField(
        default=list, help_text="[{address, kind, token, expected, in_flight, actual, difference}]"
    )
    differences = models.PositiveIntegerField(default=0, help_text="Rows whose actual is not the expected.")
    error = models.CharField(max_length=500, blank=True, help_text="Why the run could not compare.")
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(
        null=True, blank=True, help_text="When staff, or a later clean run, closed its difference."
    )
    resolved_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["chain_id", "-created_at"], name="ledger_reconcile_chain")]

    def __str__(self) -> str:
        state = "clean" if self.ok else f"{self.differences} difference(s)" if not self.error else "failed"
        return f"chain {self.chain_id} at block {self.block_number}: {state}"

    @property
    def ok(self) -> bool:
        return not self.differences and not self.error


def new_balance_transaction_id() -> str:
    import secrets

    return f"btxn_{secrets.token_hex(12)}"


class BalanceTransaction(AppendOnlyModel):
    """A merchant's view of the ledger: one row per payment, refund or adjustment of an organization, with
    gross, fee and net in base units of one token on one chain (Stripe's balance transactions). Written by
    the app that owns the payment, in the transaction of the change, once per business key; never edited.

    Amounts are stored unsigned; `sign` says which way the row moves the organization's balance (a refund
    or a negative adjustment is -1)."""

    class Type(models.TextChoices):
        PAYMENT = "payment"  # a payment completed: gross bought on the merchant's chain, fee, net received
        REFUND = "refund"  # money the service returned to a payer (a failed or expired payment, an extra)
        ADJUSTMENT = "adjustment"  # a correction staff recorded for the organization
        REFUND_BALANCE = "refund_balance"  # a top-up of the organization's refund balance reached the vault

    id = models.CharField(primary_key=True, max_length=40, default=new_balance_transaction_id, editable=False)
    key = models.CharField(max_length=200, unique=True, help_text="The business key: one row per key.")
    organization_id = models.CharField(max_length=64, help_text="The organization (platform_api) it is for.")
    type = models.CharField(max_length=20, choices=Type.choices)
    sign = models.SmallIntegerField(default=1, choices=[(1, "+"), (-1, "-")])
    chain_id = models.PositiveBigIntegerField()
    token_address = models.CharField(max_length=42)
    gross = Uint256Field()
    fee = Uint256Field(default=0)
    net = Uint256Field(help_text="What the organization's balance moved by (with `sign`).")
    source_id = models.CharField(
        max_length=64, help_text="What it is about: a transaction (txn_), a quick payment (qp_)..."
    )
    order_id = models.UUIDField(null=True, blank=True)
    payment_link_id = models.CharField(max_length=64, blank=True)
    session_id = models.CharField(max_length=64, blank=True)
    transaction_id = models.CharField(max_length=64, blank=True)
    tx_hashes = models.JSONField(
        default=list, help_text="[{role, chain_id, tx_hash}]: what to find on chain."
    )
    posting_keys = models.JSONField(default=list, help_text="The ledger postings it stems from.")
    description = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["organization_id", "-created_at", "-id"], name="ledger_btxn_org_created"),
            models.Index(fields=["organization_id", "source_id"], name="ledger_btxn_org_source"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class ReconcileStart(models.Model):
    """Where reconciliation of a devnet starts: a devnet restarted from block 0 is a new world, and the
    postings of its previous life (at block numbers it will reach again) are not its balances. Never for a
    real chain, whose history does not restart."""

    chain_id = models.PositiveBigIntegerField()
    after_posting_id = models.BigIntegerField(help_text="Only postings after this one are counted.")
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["chain_id", "-after_posting_id"], name="ledger_reconcile_start")]

    def __str__(self) -> str:
        return f"chain {self.chain_id} after posting {self.after_posting_id}"
