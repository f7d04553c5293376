"""The people of a merchant's team: members of an organization with a role, and the invitations that make them.

A member is a Django user (username = email, lower-cased) tied to one organization. The role maps onto the
platform's permissions (dashboard.roles). `session_generation` is part of every dashboard session: moving it
signs the member out everywhere. An invitation is a single-use link whose token is kept only as a digest.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.ids import public_id


def new_member_id() -> str:
    return public_id("mem")


def new_invitation_id() -> str:
    return public_id("inv")


class Role(models.TextChoices):
    OWNER = "owner", "owner"
    ADMIN = "admin", "admin"
    DEVELOPER = "developer", "developer"
    VIEWER = "viewer", "viewer"


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
