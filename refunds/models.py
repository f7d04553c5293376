"""A merchant's refund of a payment (`re_`), what funds it, and the organization's refund balance.

The money is the merchant's: a payment was delivered to their own address, so the service holds nothing to
refund from. A refund is funded by the merchant, to the refund's own deposit address (`funding_method`
`deposit`) or from the refund balance they keep with the service (`balance`), and delivered to the payer
from the vault through the transaction outbox (refunds.settlement).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from chains.keys import OwnerKind, owner_of
from core.dbfields import Uint256Field
from core.ids import public_id


def new_refund_id() -> str:
    return public_id("re")


class Refund(models.Model):
    class Status(models.TextChoices):
        REQUIRES_FUNDING = "requires_funding"
        PENDING = "pending"  # funded: being delivered
        SUCCEEDED = "succeeded"  # the payer holds it (the delivery is mined)
        FAILED = "failed"  # the delivery failed on chain: the amount went to the refund balance
        CANCELED = "canceled"  # before funding (the API, or FUNDING_SECONDS without it)

    class Reason(models.TextChoices):
        REQUESTED_BY_CUSTOMER = "requested_by_customer"
        DUPLICATE = "duplicate"
        FRAUDULENT = "fraudulent"
        OTHER = "other"

    class Funding(models.TextChoices):
        BALANCE = "balance"
        DEPOSIT = "deposit"

    # What a payment's refunds hold of its amount: no new refund may take more than the rest.
    HOLDING = (Status.REQUIRES_FUNDING, Status.PENDING, Status.SUCCEEDED)

    id = models.CharField(primary_key=True, max_length=32, default=new_refund_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="refunds"
    )
    payment_id = models.CharField(
        max_length=32, help_text="The refunded payment: a transaction (txn_) or qp_."
    )
    amount = Uint256Field(help_text="In the smallest unit of the token the merchant was paid in.")
    chain_id = models.PositiveBigIntegerField(help_text="The merchant's: where they were paid.")
    token_address = models.CharField(max_length=42, help_text="The token the merchant was paid in.")
    reason = models.CharField(max_length=30, choices=Reason.choices, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.REQUIRES_FUNDING)
    funding_method = models.CharField(max_length=10, choices=Funding.choices)
    funding_address = models.CharField(
        max_length=42, blank=True, help_text="The refund's own deposit address (method `deposit`)."
    )
    funding_received = Uint256Field(default=0, help_text="What confirmed deposits of the token counted.")
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Funding is awaited until then.")
    destination_chain_id = models.PositiveBigIntegerField()
    destination_token_address = models.CharField(max_length=42)
    destination_address = models.CharField(max_length=42)
    destination_amount = Uint256Field(null=True, blank=True, help_text="What the payer receives, once known.")
    destination_quoted = Uint256Field(
        null=True,
        blank=True,
        help_text="Another chain or token: the least the payer receives as quoted when the refund was made "
        "(the service's fee taken), shown before it is funded.",
    )
    order_id = models.UUIDField(
        null=True, blank=True, unique=True, help_text="The swap that delivers it to another chain or token."
    )
    tx_hashes = models.JSONField(default=list, blank=True, help_text="[{chain_id, tx_hash, kind}]")
    failure_reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="refund_org_created"),
            models.Index(fields=["organization", "payment_id"], name="refund_org_payment"),
            models.Index(
                fields=["expires_at"], condition=Q(status="requires_funding"), name="refund_awaiting_funding"
            ),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def owner(self) -> str:
        return owner_of(OwnerKind.REFUND, self.id)


class RefundDeposit(models.Model):
    """What one deposit to a refund's address counted toward its funding, and what goes back to its sender."""

    refund = models.ForeignKey(Refund, on_delete=models.CASCADE, related_name="deposits")
    deposit = models.OneToOneField("chains.Deposit", on_delete=models.PROTECT, related_name="+")
    counted = Uint256Field(default=0, help_text="Toward the refund's amount.")
    returned = Uint256Field(default=0, help_text="Another token, a late deposit, or beyond the amount.")

    def __str__(self) -> str:
        return f"{self.refund_id}: {self.deposit_id}"


class RefundBalance(models.Model):
    """What an organization holds with the service to fund refunds, per chain and token: credited by a failed
    delivery (and by top-ups), debited by a refund funded from it."""

    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="refund_balances"
    )
    chain_id = models.PositiveBigIntegerField()
    token_address = models.CharField(max_length=42)
    amount = Uint256Field(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "chain_id", "token_address"], name="refund_balance_org_token"
            )
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.chain_id} {self.token_address}: {self.amount}"


def new_top_up_id() -> str:
    return public_id("rtu")


class RefundTopUp(models.Model):
    """A deposit address that tops up the organization's refund balance in one token on one chain: what arrives
    there in that token before `expires_at` is credited once the vault holds it (its sweep mined)."""

    id = models.CharField(primary_key=True, max_length=32, default=new_top_up_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="refund_top_ups"
    )
    chain_id = models.PositiveBigIntegerField()
    token_address = models.CharField(max_length=42)
    deposit_address = models.CharField(max_length=42, unique=True)
    sweeps = models.PositiveIntegerField(
        default=0, help_text="Sweeps asked so far (`refund:<id>:sweep:<n>`)."
    )
    credited = Uint256Field(default=0, help_text="What reached the refund balance through it.")
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="refund_topup_org_created")]

    def __str__(self) -> str:
        return self.id

    @property
    def owner(self) -> str:
        return owner_of(OwnerKind.REFUND, self.id)


class RefundTopUpDeposit(models.Model):
    """One deposit to a top-up's address: counted toward the balance (credited once the sweep that took it is
    mined), or returned to its sender (another token, or after the top-up expired)."""

    top_up = models.ForeignKey(RefundTopUp, on_delete=models.CASCADE, related_name="deposits")
    deposit = models.OneToOneField("chains.Deposit", on_delete=models.PROTECT, related_name="+")
    counted = Uint256Field(default=0)
    returned = Uint256Field(default=0)
    sweep = models.PositiveIntegerField(null=True, blank=True, help_text="The sweep that takes it (its n).")
    credited_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.top_up_id}: {self.deposit_id}"


def new_withdrawal_id() -> str:
    return public_id("rbw")


class RefundWithdrawal(models.Model):
    """What an admin took back out of the refund balance, to an address they confirmed (a member with a second
    factor): taken from the balance when asked, sent by the vault, and credited back if the transfer fails."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=32, default=new_withdrawal_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="refund_withdrawals"
    )
    chain_id = models.PositiveBigIntegerField()
    token_address = models.CharField(max_length=42)
    amount = Uint256Field()
    address = models.CharField(max_length=42, help_text="Where it goes, as the admin confirmed it.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    tx_hash = models.CharField(max_length=66, blank=True)
    failure_reason = models.CharField(max_length=500, blank=True)
    requested_by = models.CharField(max_length=150, help_text="The member, as the audit log names them.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="refund_withdrawal_org")]

    def __str__(self) -> str:
        return self.id
