"""Organizations, API keys and the platform's own bookkeeping rows."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from core.ids import public_id


def new_organization_id() -> str:
    return public_id("org")


def new_api_key_id() -> str:
    return public_id("ak")


def new_quick_payment_id() -> str:
    """Named by platform_api's first migration, from before quick payments moved to the quickpay app."""
    return public_id("qp")


class Organization(models.Model):
    """A merchant: the tenant that owns every platform resource."""

    id = models.CharField(primary_key=True, max_length=32, default=new_organization_id, editable=False)
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    contact_email = models.EmailField(
        blank=True, help_text="Where operational notices (e.g. disabled webhooks) go."
    )
    description = models.CharField(max_length=500, blank=True)
    logo_url = models.URLField(max_length=2048, blank=True)
    website_url = models.URLField(max_length=2048, blank=True)
    # Branding the payer sees on the hosted page, the widgets and the receipt emails.
    brand_color = models.CharField(max_length=7, blank=True, help_text="Accent colour such as #1f4fd1.")
    support_email = models.EmailField(
        blank=True, help_text="Shown to payers as the merchant's support contact."
    )
    support_url = models.URLField(max_length=2048, blank=True, help_text="Shown to payers: a help page.")
    logo_digest = models.CharField(
        max_length=64,
        blank=True,
        editable=False,
        help_text="SHA-256 of the uploaded logo (merchant.OrganizationLogo).",
    )
    redirect_domains = models.JSONField(
        default=list,
        blank=True,
        help_text="Hosts (and their subdomains) a payer's URL may name as success or cancel page; with the "
        "website's host, the only ones the hosted page sends payers to besides the merchant's own URLs.",
    )
    # Fill payment links and products created without a token, chain or recipient.
    default_recipient_address = models.CharField(max_length=42, blank=True)
    default_chain_id = models.PositiveBigIntegerField(null=True, blank=True)
    default_token_address = models.CharField(max_length=42, blank=True)
    # Test mode: a live organization's sandbox is an organization of its own, so that nothing of it (orders,
    # links, customers, balances, analytics, events, webhooks, keys) can be listed, counted or paid with the
    # live one's: every query is already scoped to one organization. It transacts on test chains only
    # (chains.registry.Chain.for_tests; platform_api.testmode) and its keys begin `svc_test_`.
    livemode = models.BooleanField(
        default=True,
        db_default=True,  # rows written by code from before the column (a rolling deploy) are live
        editable=False,
        help_text="False: a test-mode organization (its keys are svc_test_).",
    )
    sandbox_of = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.CASCADE,
        related_name="sandbox",
        help_text="The live organization whose test mode this is.",
    )
    updated_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(sandbox_of__isnull=True) | models.Q(livemode=False),
                name="organization_sandbox_is_test",
            )
        ]

    def __str__(self) -> str:
        return self.slug

    def refresh_from_db(self, using=None, fields=None, from_queryset=None):
        # An organization known by its id alone (an API key's cached record, platform_api.key_cache) loads
        # every field it lacks at the first read of one, in one query rather than one per field.
        deferred = self.get_deferred_fields()
        if fields is not None and deferred and set(fields) <= deferred:
            fields = deferred
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)


# A test-mode organization's keys begin so (platform_api.testmode); as long as the live ones' `svc_live_`.
TEST_API_KEY_PREFIX = "svc_test_"


class Permission(models.TextChoices):
    READ = "read", "read"
    WRITE = "write", "write"
    ADMIN = "admin", "admin"


# admin includes write, which includes read.
PERMISSION_RANK = {Permission.READ: 1, Permission.WRITE: 2, Permission.ADMIN: 3}


class ApiKey(models.Model):
    """A merchant's API key; only its SHA-256 digest and a display prefix are stored."""

    id = models.CharField(primary_key=True, max_length=32, default=new_api_key_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    key_prefix = models.CharField(
        max_length=20, help_text="Leading characters of the key, for recognising it."
    )
    key_digest = models.CharField(max_length=64, unique=True, editable=False)
    # Not a column: the request's rate-limit result when authentication counted it with the key's record.
    counted: Any = None
    permissions = models.JSONField(default=list)
    expires_at = models.DateTimeField(null=True, blank=True)
    is_active = models.BooleanField(default=True, help_text="False once revoked; revocation is irreversible.")
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="apikey_org_created")]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}...)"

    @property
    def level(self) -> int:
        return max((PERMISSION_RANK.get(p, 0) for p in self.permissions), default=0)

    def allows(self, required: str) -> bool:
        return self.level >= PERMISSION_RANK[Permission(required)]

    @property
    def livemode(self) -> bool:
        """False for a test-mode organization's key (`svc_test_`): known from the key, without its
        organization's row (a key's organization never changes mode)."""
        return not self.key_prefix.startswith(TEST_API_KEY_PREFIX)

    @property
    def highest_permission(self) -> str:
        return max(self.permissions, key=lambda p: PERMISSION_RANK.get(p, 0), default=Permission.READ)

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())


class IdempotencyRecord(models.Model):
    """The first response to a request sent with an Idempotency-Key, replayed for 24 hours."""

    class State(models.TextChoices):
        IN_PROGRESS = "in_progress"
        COMPLETED = "completed"

    scope = models.CharField(max_length=100, help_text="Organization id, or a digest of the client IP.")
    key = models.CharField(max_length=255)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    request_digest = models.CharField(max_length=64)
    state = models.CharField(max_length=20, choices=State.choices, default=State.IN_PROGRESS)
    response_status = models.PositiveSmallIntegerField(null=True)
    # The response may hold a secret shown once (an API key, a webhook secret): stored encrypted.
    response_body_encrypted = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "key"], name="idempotency_scope_key")]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]


class RateLimitBucket(models.Model):
    """The times of the requests a bucket allowed in its window, 60 s unless the caller says (used when no Redis
    is configured)."""

    bucket = models.CharField(max_length=200, unique=True)
    hits = models.TextField(blank=True, default="", help_text="Seconds since the epoch, space-separated.")
    expires_at = models.FloatField(default=0, help_text="When the newest hit leaves the window.")

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="ratelimit_bucket_expires")]


__all__ = ["ApiKey", "IdempotencyRecord", "Organization", "Permission", "RateLimitBucket"]
