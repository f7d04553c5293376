"""Quick payments: pay an amount of a registry token to the payment's own deposit address, no checkout."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.dbfields import Uint256Field
from core.ids import public_id


def new_quick_payment_id() -> str:
    return public_id("qp")


class QuickPayment(models.Model):
    """A one-shot payment: pay `amount` of a registry token to the payment's own deposit address.

    Created without a key it belongs to nobody; created with one it belongs to
    the key's organization, whose webhooks learn that it was paid.
    """

    class Status(models.TextChoices):
        AWAITING_PAYMENT = "awaiting_payment"
        PAID = "paid"
        EXPIRED = "expired"

    id = models.CharField(primary_key=True, max_length=32, default=new_quick_payment_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="quick_payments",
    )
    amount = Uint256Field(help_text="Smallest token unit.")
    amount_received = models.CharField(
        max_length=78, default="0", help_text="What counted deposits brought, in the smallest unit (digits)."
    )
    token_address = models.CharField(max_length=42)
    chain_id = models.PositiveBigIntegerField()
    recipient_address = models.CharField(max_length=42)
    deposit_address = models.CharField(max_length=42, unique=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.AWAITING_PAYMENT)
    expires_at = models.DateTimeField()
    paid_at = models.DateTimeField(null=True, blank=True)
    payer_address = models.CharField(
        max_length=42, blank=True, help_text="Sender of the first counted deposit."
    )
    tx_hash = models.CharField(max_length=66, blank=True, help_text="The deposit that completed the payment.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "platform_api_quickpayment"  # moved from platform_api: the table kept its name
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "expires_at"], name="quickpay_status_expiry")]

    def __str__(self) -> str:
        return self.id


class QuickPaymentDeposit(models.Model):
    """What one deposit to a quick payment's address counted toward it, and what of it goes back to its sender."""

    payment = models.ForeignKey(QuickPayment, on_delete=models.CASCADE, related_name="deposits")
    deposit = models.OneToOneField("chains.Deposit", on_delete=models.PROTECT, related_name="+")
    counted = Uint256Field(default=0, help_text="Toward the payment's amount.")
    refund = Uint256Field(default=0, help_text="Another token, a late deposit, or beyond the amount.")

    class Meta:
        db_table = "platform_api_quickpaymentdeposit"

    def __str__(self) -> str:
        return f"{self.payment_id}: {self.deposit_id}"
