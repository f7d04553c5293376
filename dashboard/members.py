"""Members and invitations: the services the dashboard's pages and `manage.py create_member` share.

An invitation is a link with a random token (only its SHA-256 is kept), valid DASHBOARD_INVITATION_HOURS,
used once: accepting it is a conditional update, so two tabs cannot both make a member of it.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.db import IntegrityError, transaction
from django.utils import timezone

from dashboard.auth import normalise_email
from dashboard.models import Invitation, Member, Role
from platform_api.models import Organization


class MemberError(ValueError):
    """Why a member cannot be made, in words for the person making it."""


@dataclass(frozen=True)
class InvitationLink:
    invitation: Invitation
    url: str
    hours: int


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def member_create(*, organization: Organization, email: str, role: str, password: str) -> Member:
    email = normalise_email(email)
    if role not in Role.values:
        raise MemberError(f"{role!r} is not a role: owner, admin, developer or viewer.")
    users = get_user_model()
    if users.objects.filter(username=email).exists():
        raise MemberError(f"{email} already has an account.")
    user = users(username=email, email=email)
    validate_password(password, user)
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:
        raise MemberError(f"{email} already has an account.") from None
    return Member.objects.create(user=user, organization=organization, role=role)


def invitation_create(
    *, organization: Organization, email: str, role: str, invited_by: Member | None
) -> InvitationLink:
    email = normalise_email(email)
    if role not in Role.values:
        raise MemberError(f"{role!r} is not a role: owner, admin, developer or viewer.")
    if get_user_model().objects.filter(username=email).exists():
        raise MemberError(f"{email} already has an account.")
    token = secrets.token_urlsafe(32)
    hours = settings.DASHBOARD_INVITATION_HOURS
    invitation = Invitation.objects.create(
        organization=organization,
        email=email,
        role=role,
        token_digest=token_digest(token),
        invited_by=invited_by,
        expires_at=timezone.now() + timedelta(hours=hours),
    )
    url = f"{settings.PUBLIC_BASE_URL.rstrip('/')}/dashboard/invitations/{token}/"
    return InvitationLink(invitation=invitation, url=url, hours=hours)


def invitation_open(token: str) -> Invitation | None:
    """The invitation this token opens, if it is still unused, unrevoked and unexpired."""
    return (
        Invitation.objects.select_related("organization")
        .filter(
            token_digest=token_digest(token),
            accepted_at__isnull=True,
            revoked_at__isnull=True,
            expires_at__gt=timezone.now(),
        )
        .first()
    )


@transaction.atomic
def invitation_accept(*, token: str, password: str) -> Member:
    """The member the invitation makes, with this password; MemberError if it was used, revoked or expired
    meanwhile, ValidationError if the password is too weak (and nothing is written)."""
    invitation = invitation_open(token)
    if invitation is None:
        raise MemberError("This invitation link was already used, was revoked, or has expired.")
    claimed = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(
        accepted_at=timezone.now()
    )
    if not claimed:
        raise MemberError("This invitation link was already used, was revoked, or has expired.")
    return member_create(
        organization=invitation.organization, email=invitation.email, role=invitation.role, password=password
    )
