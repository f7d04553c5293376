"""The merchant's own records: products (what links sell), customers (who paid), and revenue by day.

The tables were `platform_api`'s and keep their names (`db_table`): only Django's state moved here
(`merchant 0001`).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.dbfields import EncryptedTextField, Uint256Field
from core.ids import public_id


def new_customer_id() -> str:
    return public_id("cust")


def new_product_id() -> str:
    return public_id("prod")


class Product(models.Model):
    """An item of the merchant's catalogue; `generate-link` makes a payment link from it."""

    class Type(models.TextChoices):
        ONE_TIME = "one_time"
        VARIABLE = "variable"

    id = models.CharField(primary_key=True, max_length=32, default=new_product_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="products"
    )
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    product_type = models.CharField(max_length=20, choices=Type.choices, default=Type.ONE_TIME)
    amount = Uint256Field(null=True, blank=True, help_text="Empty for a variable product.")
    token_address = models.CharField(max_length=42)
    chain_id = models.PositiveBigIntegerField()
    recipient_address = models.CharField(max_length=42)
    image_url = models.URLField(max_length=2048, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    form_schema = models.JSONField(default=dict, blank=True)
    shipping_options = models.JSONField(default=list, blank=True)
    is_active = models.BooleanField(default=True, help_text="False once archived (DELETE).")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "platform_api_product"
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["organization", "is_active", "-created_at"], name="product_org_active_created"
            )
        ]

    def __str__(self) -> str:
        return self.name


class Customer(models.Model):
    """A payer as the merchant knows them, keyed by wallet address; name and email encrypted at rest."""

    id = models.CharField(primary_key=True, max_length=32, default=new_customer_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="customers"
    )
    wallet_address = models.CharField(max_length=42, help_text="Lower-cased.")
    name = EncryptedTextField()
    email = EncryptedTextField()
    # Keyed digests of the normalised name and email: `search` finds them without decrypting every row.
    name_digest = models.CharField(max_length=64, blank=True, editable=False)
    email_digest = models.CharField(max_length=64, blank=True, editable=False)
    metadata = models.JSONField(default=dict, blank=True)
    total_paid = models.DecimalField(max_digits=20, decimal_places=2, default=0, help_text="USD.")
    transaction_count = models.PositiveIntegerField(default=0)
    first_payment_at = models.DateTimeField(null=True, blank=True)
    last_payment_at = models.DateTimeField(null=True, blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "platform_api_customer"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "wallet_address"], name="customer_org_wallet")
        ]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="customer_org_created"),
            models.Index(fields=["organization", "first_payment_at"], name="customer_org_first_payment"),
            models.Index(fields=["organization", "email_digest"], name="customer_org_email"),
            models.Index(fields=["organization", "name_digest"], name="customer_org_name"),
        ]

    def __str__(self) -> str:
        return self.wallet_address

    def save(self, *args, **kwargs):
        from core.crypto import blind_index

        self.name_digest = blind_index(self.name, purpose="customer-name") if self.name else ""
        self.email_digest = blind_index(self.email, purpose="customer-email") if self.email else ""
        if kwargs.get("update_fields") is not None:
            fields = set(kwargs["update_fields"])
            kwargs["update_fields"] = fields | {
                f"{name}_digest" for name in ("name", "email") if name in fields
            }
        super().save(*args, **kwargs)


class RevenueDay(models.Model):
    """Completed payments of one UTC day, per (link, chain, token): what the analytics overview sums.

    Written in the transaction that completes a payment (`analytics.revenue_record`),
    so it never disagrees with the transactions; `manage.py rebuild_revenue`
    recomputes it from them. Only completed payments count, and a completed
    payment never changes again.
    """

    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="revenue_days"
    )
    day = models.DateField(help_text="UTC day of completion.")
    payment_link_id = models.CharField(max_length=32, blank=True, help_text="Empty: no link.")
    chain_id = models.PositiveBigIntegerField()
    token_address = models.CharField(max_length=42)
    transactions = models.PositiveIntegerField(default=0)
    amount_usd = models.DecimalField(max_digits=20, decimal_places=2, default=0)

    class Meta:
        db_table = "platform_api_revenueday"
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "day", "payment_link_id", "chain_id", "token_address"],
                name="revenue_day_key",
            )
        ]


class OrganizationLogo(models.Model):
    """The organization's logo as the service serves it to payers (`/pay/logo/{org}/{digest}.png`): uploaded
    as PNG, JPEG, WebP or GIF, checked and re-encoded as a PNG of at most 512 px a side (merchant.branding),
    so that nothing but pixels of the upload reaches a payer's browser and no page loads another origin."""

    organization = models.OneToOneField(
        "platform_api.Organization", on_delete=models.CASCADE, primary_key=True, related_name="logo"
    )
    image = models.BinaryField(help_text="PNG.")
    digest = models.CharField(max_length=64, help_text="SHA-256 of `image`.")
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"logo of {self.organization_id}"
