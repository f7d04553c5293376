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
from django.dispatch import receiver
from django.template.loader import render_to_string
from django.utils import timezone

from core.emails import is_email
from dashboard.auth import normalise_email, sign_out_everywhere
from dashboard.models import Invitation, Member, Role
from merchant.signals import payout_defaults_changed
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.models import Organization
from platform_api.signals import record_write
from webhooks.kinds import EmailKind
from webhooks.notifications import queue


class MemberError(ValueError):
    """Why a member cannot be made, in words for the person making it; `field` is the form field it is about."""

    def __init__(self, message: str, field: str = "email"):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class InvitationLink:
    invitation: Invitation
    url: str
    hours: int


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _checked_email(email: str) -> str:
    """The address lower-cased, or MemberError: one address as Django's validator takes it (no CR/LF)."""
    email = normalise_email(email)
    if not is_email(email):
        raise MemberError(f"{email!r} is not an email address.")
    return email


@transaction.atomic
def member_create(*, organization: Organization, email: str, role: str, password: str) -> Member:
    email = _checked_email(email)
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
    email = _checked_email(email)
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


@transaction.atomic
def member_invite(*, ctx: RequestContext, inviter: Member, email: str, role: str) -> InvitationLink:
    """Invite someone to the inviter's organization: the invitation, its audit event and the email with its
    link (through the notification outbox, sent after commit). Only an owner invites an owner."""
    if role == Role.OWNER and inviter.role != Role.OWNER:
        raise MemberError("Only an owner may invite an owner.", field="role")
    organization = inviter.organization
    link = invitation_create(organization=organization, email=email, role=role, invited_by=inviter)
    record_write(
        ctx=ctx,
        event_type=AuditName.INVITATION_CREATED,
        resource_type="invitation",
        resource_id=link.invitation.id,
        created=True,
    )
    body = render_to_string(
        "dashboard/email/invitation.txt",
        {"organization": organization, "link": link, "inviter": inviter.user.email},
    )
    queue(
        organization=organization,
        event=None,
        event_type=EmailKind.MEMBER_INVITED,
        to=link.invitation.email,
        subject=f"Join {organization.name} on the payments dashboard"[:200],
        body=body,
    )
    return link


@transaction.atomic
def invitation_revoke(*, ctx: RequestContext, organization: Organization, invitation_id: str) -> bool:
    """Revoke an unused invitation of the organization; False if it has none by this id."""
    found = Invitation.objects.filter(organization=organization, pk=invitation_id)
    if not found.exists():
        return False
    if found.filter(accepted_at__isnull=True, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        record_write(
            ctx=ctx,
            event_type=AuditName.INVITATION_REVOKED,
            resource_type="invitation",
            resource_id=invitation_id,
        )
    return True


@transaction.atomic
def member_remove(*, ctx: RequestContext, remover: Member, member_id: str) -> Member | None:
    """Remove a member of the remover's organization: signed out everywhere, account closed. None if there is
    no such member; MemberError if an owner would be removed by a non-owner, or the last owner would go."""
    target = (
        Member.objects.select_for_update().filter(organization=remover.organization, pk=member_id).first()
    )
    if target is None:
        return None
    if target.role == Role.OWNER:
        owners = Member.objects.select_for_update().filter(organization=remover.organization, role=Role.OWNER)
        if remover.role != Role.OWNER or owners.count() <= 1:
            raise MemberError("An owner is removed only by another owner, and the last owner stays.")
    sign_out_everywhere(target)
    user = target.user
    target.delete()
    user.is_active = False
    user.save(update_fields=["is_active"])
    record_write(ctx=ctx, event_type=AuditName.MEMBER_DELETED, resource_type="member", resource_id=member_id)
    return target


def _payout_text(values: dict) -> str:
    from chains.registry import chain_get
    from chains.tokens import token_get

    chain_id, token_address = values.get("default_chain_id"), values.get("default_token_address")
    token = token_get(chain_id=chain_id, address=token_address) if chain_id and token_address else None
    chain = chain_get(chain_id) if chain_id else None
    paid_in = (
        f"{token.symbol if token else token_address} on {chain.name if chain else f'chain {chain_id}'}"
        if token_address
        else "not set"
    )
    return f"recipient {values.get('default_recipient_address') or 'not set'}, paid in {paid_in}"


def _actor_text(actor: str) -> str:
    kind, _, ident = actor.partition(":")
    if kind == "member":
        member = Member.objects.select_related("user").filter(pk=ident).first()
        return f"{member.user.email} in the dashboard" if member else actor
    if kind == "api_key":
        return f"the API key {ident}"
    if kind == "staff":
        return f"the service's staff ({ident})"
    return actor or "the service"


@receiver(payout_defaults_changed, dispatch_uid="dashboard.payout_defaults_changed")
def on_payout_defaults_changed(
    sender, *, organization: Organization, before: dict, after: dict, actor: str, **_
):
    """`merchant.signals.payout_defaults_changed`: every owner of the organization is emailed, in the
    transaction of the change (the notification outbox sends it after commit)."""
    body = render_to_string(
        "dashboard/email/payouts_changed.txt",
        {
            "organization": organization,
            "before": _payout_text(before),
            "after": _payout_text(after),
            "actor": _actor_text(actor),
            "settings_url": f"{settings.PUBLIC_BASE_URL.rstrip('/')}/dashboard/settings/",
        },
    )
    owners_email(
        organization,
        event_type=EmailKind.ORGANIZATION_PAYOUTS_CHANGED,
        subject=f"Where {organization.name}'s payments go was changed",
        body=body,
    )


def owners_email(organization: Organization, *, event_type: EmailKind, subject: str, body: str) -> None:
    """Email every owner of the organization, in the caller's transaction (the notification outbox sends it
    after commit)."""
    owners = Member.objects.filter(organization=organization, role=Role.OWNER).select_related("user")
    for owner in owners:
        queue(
            organization=organization,
            event=None,
            event_type=event_type,
            to=owner.user.email,
            subject=subject[:200],
            body=body,
        )


def refund_withdrawal_announced(
    organization: Organization, *, shown: str, chain: str, address: str, withdrawal_id: str, actor: str
) -> None:
    """Every owner is told that money left the refund balance, and where to."""
    owners_email(
        organization,
        event_type=EmailKind.REFUND_BALANCE_WITHDRAWN,
        subject=f"{shown} was withdrawn from {organization.name}'s refund balance",
        body=render_to_string(
            "dashboard/email/refund_withdrawn.txt",
            {
                "organization": organization,
                "shown": shown,
                "chain": chain,
                "address": address,
                "withdrawal": withdrawal_id,
                "actor": _actor_text(actor),
                "refunds_url": f"{settings.PUBLIC_BASE_URL.rstrip('/')}/dashboard/refunds/",
            },
        ),
    )
