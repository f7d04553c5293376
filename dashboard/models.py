"""The people of a merchant's team: members of an organization with a role, and the invitations that make them.

A member is a Django user (username = email, lower-cased) tied to one organization. The role maps onto the
platform's permissions (dashboard.roles). `session_generation` is part of every dashboard session: moving it
signs the member out everywhere. An invitation is a single-use link whose token is kept only as a digest.
"""

from __future__ import annotations

import re
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone
from django_otp.models import Device, TimestampMixin

from core.crypto import blind_index
from core.ids import public_id
from dashboard.roles import API_PERMISSION, TEST_MODE_API_PERMISSION, Role

RECOVERY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: read off paper without doubt
RECOVERY_SHAPE = re.compile(r"[a-z0-9]{5}-?[a-z0-9]{5}")
RECOVERY_COUNT = 10


def new_member_id() -> str:
    return public_id("mem")


def new_invitation_id() -> str:
    return public_id("inv")


class Member(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_member_id, editable=False)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="member")
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="members"
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    session_generation = models.PositiveIntegerField(
        default=0, help_text="Part of every dashboard session; moving it signs the member out everywhere."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["organization", "created_at"], name="member_org_created")]

    def __str__(self) -> str:
        return f"{self.user.email} ({self.role})"

    @property
    def api_permission(self) -> str:
        """The most this member may do through the API's services (dashboard.roles.API_PERMISSION)."""
        return API_PERMISSION[self.role]

    def api_permission_in(self, organization) -> str:
        """`api_permission`, in its organization or that organization's test mode (a developer writes there:
        dashboard.roles.TEST_MODE_API_PERMISSION)."""
        if organization.livemode or organization.sandbox_of_id != self.organization_id:
            return self.api_permission
        return TEST_MODE_API_PERMISSION[self.role]


class Invitation(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_invitation_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField()
    role = models.CharField(max_length=10, choices=Role.choices)
    token_digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the link's token.")
    invited_by = models.ForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="invitation_org_created")]

    def __str__(self) -> str:
        return f"{self.email} ({self.role})"


def recovery_digest(code: str) -> str | None:
    """The keyed digest a recovery code is kept as, or None when `code` has not a recovery code's shape."""
    typed = "".join(code.split()).lower()
    if not RECOVERY_SHAPE.fullmatch(typed):
        return None
    return blind_index(typed.replace("-", ""), purpose="dashboard-recovery-code")


class RecoveryCodes(TimestampMixin, Device):
    """A member's recovery codes, as one django-otp device: each code signs in once in place of the
    authenticator's (a lost phone), and a session verified by one is verified like any other."""

    class Meta:
        verbose_name = "recovery codes"
        verbose_name_plural = "recovery codes"

    def verify_token(self, token) -> bool:
        digest = recovery_digest(str(token))
        if digest is None:
            return False
        used = RecoveryCode.objects.filter(device=self, digest=digest, used_at__isnull=True).update(
            used_at=timezone.now()
        )  # a conditional update: two requests with one code cannot both pass
        if used:
            self.set_last_used_timestamp(commit=True)
        return bool(used)

    def remaining(self) -> int:
        return self.codes.filter(used_at__isnull=True).count()

    def issue(self) -> list[str]:
        """A new set of codes, replacing every earlier one; the codes are shown once and kept as digests."""
        codes = []
        for _ in range(RECOVERY_COUNT):
            text = "".join(secrets.choice(RECOVERY_ALPHABET) for _ in range(10))
            codes.append(f"{text[:5]}-{text[5:]}")
        self.codes.all().delete()
        RecoveryCode.objects.bulk_create(
            [RecoveryCode(device=self, digest=recovery_digest(code) or "") for code in codes]
        )
        return codes


class RecoveryCode(models.Model):
    """One recovery code of a member, kept as a keyed digest; `used_at` once it signed in."""

    device = models.ForeignKey(RecoveryCodes, on_delete=models.CASCADE, related_name="codes")
    digest = models.CharField(max_length=64)
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["device", "digest"], name="recovery_code_unique")]
