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
