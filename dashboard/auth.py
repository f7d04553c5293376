"""Signing a member in and keeping their session honest.

Sign-in is email and password (Django's users and hashers), then a second factor when the member has an
authenticator (django-otp TOTP) — which every owner must have: an owner without one sets it up before any
page. The second factor is the authenticator's current code or one of the member's recovery codes (given at
set-up, each used once, kept as keyed digests). Failed sign-ins are limited by dashboard.throttle (per
address across accounts, a growing delay per account, and browsers the member signed in from before are
never held back by what others sent). A wrong email, a wrong password and a refused account answer alike
and take the same time (a password is hashed either way).

Whoever has only the password gets no further than the code step: an authenticator is set up with the
password alone only while the member has none, and replacing one needs a signed-in session and a code from
the current one (or a recovery code); staff can also reset it (the member's admin page).

A dashboard session carries the member's `session_generation`; "sign out everywhere" moves it, and every
other session of the member stops at its next request.
"""

from __future__ import annotations

import time
from functools import wraps
from urllib.parse import urlencode

import django_otp
from django.conf import settings
from django.contrib.auth import get_user_model, login, logout
from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.db.models import F
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django_otp import login as otp_login
from django_otp.models import Device
from django_otp.plugins.otp_totp.models import TOTPDevice

from chains.testchains import enter_test_mode
from dashboard.models import Member, RecoveryCodes, Role, recovery_digest
from dashboard.roles import READ, may
from dashboard.throttle import Attempt, SignInRefused, normalise_email
from observability import context
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.signals import record_write
from platform_api.testmode import organization_sandbox

__all__ = ["Attempt", "SignInRefused", "normalise_email"]

GENERATION = "dashboard_generation"
PENDING = "dashboard_pending_member"  # the password was right; a code (or an owner's authenticator) is due
PENDING_EMAIL = "dashboard_pending_email"
NEEDS_CODE = "dashboard_needs_code"
PROVEN_AT = "dashboard_proven_at"  # when this session last gave a second factor
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
TEST_MODE = "dashboard_test_mode"  # the switch: the pages show and change the organization's test mode


def password_member(attempt: Attempt, password: str) -> Member | None:
    """The member whose email and password these are, or None (and the failure counted); SignInRefused
    when this attempt must wait first."""
    attempt.check()
    user = (
        get_user_model()
        .objects.filter(username=normalise_email(attempt.email), is_active=True)
        .select_related("member__organization")
        .first()
    )
    if user is None:
        make_password(password)  # the time a real check takes: the answer says nothing of the email
        attempt.failed()
        return None
    if not user.check_password(password) or not hasattr(user, "member"):
        attempt.failed()
        return None
    return user.member


def confirmed_device(member: Member) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user_id=member.user_id, confirmed=True).order_by("id").first()


def recovery_codes(member: Member) -> RecoveryCodes | None:
    return RecoveryCodes.objects.filter(user_id=member.user_id, confirmed=True).first()


def second_factor(member: Member, code: str) -> Device | None:
    """The device that accepts `code` now: the authenticator for 6 digits, the recovery codes for a
    recovery code's shape; each code is accepted once (the device's row is locked while it checks)."""
    typed = "".join(code.split())
    if typed.isdigit() and len(typed) == 6:
        device = confirmed_device(member)
    elif recovery_digest(typed) is not None:
        device = recovery_codes(member)
    else:
        return None
    if device is None:
        return None
    return django_otp.verify_token(member.user, device.persistent_id, typed)


def code_member(attempt: Attempt, member: Member, code: str) -> Device | None:
    """The member's device that accepts `code` (see second_factor), else None and the failure counted;
    SignInRefused when this attempt must wait first."""
    attempt.check()
    device = second_factor(member, code)
    if device is None:
        attempt.failed()
    return device


def prove(request: HttpRequest, member: Member, code: str) -> Device | None:
    """A signed-in member gives a second factor again (to replace their authenticator, or change where the
    money goes): the device that accepted it, else None; limited like sign-in (SignInRefused)."""
    device = code_member(Attempt(request, member.user.username), member, code)
    if device is not None:
        request.session[PROVEN_AT] = time.time()
    return device


def recently_proven(request: HttpRequest) -> bool:
    """Whether this session gave a second factor in the last DASHBOARD_REAUTH_SECONDS."""
    return time.time() - request.session.get(PROVEN_AT, 0) < settings.DASHBOARD_REAUTH_SECONDS


@transaction.atomic
def authenticator_confirm(*, member: Member, device: TOTPDevice) -> list[str] | None:
    """The member's new authenticator replaces any earlier one; the recovery codes to show once when the
    member had none (a first set-up), else None (their codes stay)."""
    TOTPDevice.objects.filter(user=member.user).exclude(pk=device.pk).delete()
    TOTPDevice.objects.filter(pk=device.pk).update(confirmed=True)
    device.confirmed = True
    if recovery_codes(member) is not None:
        return None
    return recovery_codes_issue(member=member)


@transaction.atomic
def recovery_codes_issue(*, member: Member) -> list[str]:
    """A new set of recovery codes for the member (the earlier ones stop working)."""
    device, _ = RecoveryCodes.objects.get_or_create(
        user=member.user, defaults={"name": "recovery codes", "confirmed": True}
    )
    return device.issue()


@transaction.atomic
def second_factor_reset(*, member: Member, ctx: RequestContext) -> None:
    """Staff reset a member's second factor (a lost phone and no recovery code): the authenticator and the
    recovery codes are gone, every session ends; an owner sets a new authenticator up at the next sign-in."""
    TOTPDevice.objects.filter(user=member.user).delete()
    RecoveryCodes.objects.filter(user=member.user).delete()
    sign_out_everywhere(member)
    record_write(
        ctx=ctx,
        event_type=AuditName.MEMBER_TWO_FACTOR_RESET,
        resource_type="member",
        resource_id=member.id,
    )


def audit_member(request: HttpRequest, member: Member, event_type: AuditName) -> None:
    """What a member did to their own account (signed in, joined, turned on two-factor...), in the
    organization's audit log with the member as the actor. Failed attempts are not written: a wrong
    password must cost a known email what it costs an unknown one, and attackers write nothing."""
    record_write(
        ctx=RequestContext.for_member(request, member),
        event_type=event_type,
        resource_type="member",
        resource_id=member.id,
    )


def complete_sign_in(request: HttpRequest, member: Member, device: Device | None) -> None:
    """A fresh session for the member (a new key: no fixation), verified by `device` when given."""
    request.session.pop(PENDING, None)
    request.session.pop(PENDING_EMAIL, None)
    login(request, member.user, backend="django.contrib.auth.backends.ModelBackend")
    if device is not None:
        otp_login(request, device)
        request.session[PROVEN_AT] = time.time()
    member.refresh_from_db(fields=["session_generation"])
    request.session[GENERATION] = member.session_generation
    request.session[NEEDS_CODE] = device is not None or member.role == Role.OWNER
    audit_member(request, member, AuditName.MEMBER_SIGNED_IN)


def sign_out_everywhere(member: Member) -> None:
    Member.objects.filter(pk=member.pk).update(session_generation=F("session_generation") + 1)


def member_view(action: str = READ, *, read: str = READ, modes: bool = True):
    """A dashboard page: a signed-in member of this session's generation, verified by a code where one is
    due; a write the member's role does not allow is 403 and changes nothing. GETs need `read` (READ: every
    member; the keys and settings pages ask more, to read them too).

    `request.organization` is what the page shows and changes: the member's organization, or in test mode
    (the switch, `TEST_MODE` in the session) its sandbox (platform_api.testmode). A page about the member or
    the team (`modes=False`) is the live organization's in either mode."""

    def decorate(view):
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            user = request.user
            sign_in = f"{reverse('dashboard:sign-in')}?{urlencode({'next': request.get_full_path()})}"
            if not user.is_authenticated:
                return redirect(sign_in)
            member = Member.objects.select_related("organization", "user").filter(user_id=user.pk).first()
            if member is None or request.session.get(GENERATION) != member.session_generation:
                logout(request)
                return redirect(sign_in)
            if (request.session.get(NEEDS_CODE) or member.role == Role.OWNER) and not user.is_verified():
                logout(request)  # a session from before the code was due, or before the owner had one
                return redirect(sign_in)
            needed = read if request.method in SAFE_METHODS else action
            if not may(member.role, needed):
                return render(
                    request,
                    "dashboard/denied.html",
                    {"member": member, "message": f"Your role ({member.role}) cannot do this."},
                    status=403,
                )
            request.member = member
            organization = member.organization
            request.test_mode = bool(request.session.get(TEST_MODE))  # the switch and the banner say so
            if modes and request.test_mode:
                organization = organization_sandbox(organization)
                enter_test_mode(True)  # the chain fields take test chains only
            request.organization = organization
            context.organization_id.set(organization.pk)  # on this request's log lines
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def owned(queryset, request: HttpRequest, pk: str, what: str):
    """The signed-in member's organization's record `pk` of `queryset`, else 404 as if it did not exist:
    every record page starts here, whatever id is in the URL."""
    found = queryset.filter(organization=request.organization, pk=pk).first()  # type: ignore[attr-defined]
    if found is None:
        raise Http404(f"There is no such {what}.")
    return found
