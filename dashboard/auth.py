"""Signing a member in and keeping their session honest.

Sign-in is email and password (Django's users and hashers), then a TOTP code when the member has an
authenticator (django-otp) — which every owner must have: an owner without one sets it up before any page.
Failed sign-ins are limited per account (the email, as a keyed digest), never per client IP, so that people
sharing an office address never lock each other out: DASHBOARD_SIGNIN_FAILURES_PER_MINUTE wrong passwords
or codes for one email in any minute, then that email waits. A wrong email, a wrong password and a refused
account answer alike and take the same time (a password is hashed either way).

A dashboard session carries the member's `session_generation`; "sign out everywhere" moves it, and every
other session of the member stops at its next request.
"""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model, login, logout
from django.contrib.auth.hashers import make_password
from django.db.models import F
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django_otp import login as otp_login
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.crypto import blind_index
from dashboard.models import Member, Role
from dashboard.roles import READ, may
from platform_api import ratelimit
from platform_api.context import RequestContext
from platform_api.signals import record_write

GENERATION = "dashboard_generation"
PENDING = "dashboard_pending_member"  # the password was right; a code (or an owner's authenticator) is due
PENDING_EMAIL = "dashboard_pending_email"
NEEDS_CODE = "dashboard_needs_code"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class SignInRefused(Exception):
    """Too many failures for this email just now; `retry_after` seconds."""

    def __init__(self, retry_after: int):
        super().__init__(retry_after)
        self.retry_after = retry_after


def normalise_email(email: str) -> str:
    return email.strip().lower()


def _bucket(email: str) -> str:
    return f"dashboard-signin:{blind_index(normalise_email(email), purpose='dashboard-signin')}"


def _limit() -> int:
    return settings.DASHBOARD_SIGNIN_FAILURES_PER_MINUTE


def check_not_throttled(email: str) -> None:
    found = ratelimit.peek(_bucket(email), _limit())
    if not found.allowed:
        raise SignInRefused(found.retry_after)


def count_failure(email: str) -> None:
    ratelimit.hit(_bucket(email), _limit())


def password_member(email: str, password: str) -> Member | None:
    """The member whose email and password these are, or None (and a failure counted against the email)."""
    check_not_throttled(email)
    user = (
        get_user_model()
        .objects.filter(username=normalise_email(email), is_active=True)
        .select_related("member__organization")
        .first()
    )
    if user is None:
        make_password(password)  # the time a real check takes: the answer says nothing of the email
        count_failure(email)
        return None
    if not user.check_password(password) or not hasattr(user, "member"):
        count_failure(email)
        return None
    return user.member


def confirmed_device(member: Member) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user_id=member.user_id, confirmed=True).order_by("id").first()


def code_member(email: str, member: Member, code: str) -> TOTPDevice | None:
    """The member's authenticator if `code` is its current code (each code is accepted once), else None."""
    check_not_throttled(email)
    device = confirmed_device(member)
    if device is not None and code.strip().isdigit() and device.verify_token(code.strip()):
        return device
    count_failure(email)
    return None


def audit_member(request: HttpRequest, member: Member, event_type: str) -> None:
    """What a member did to their own account (signed in, joined, turned on two-factor...), in the
    organization's audit log with the member as the actor. Failed attempts are not written: a wrong
    password must cost a known email what it costs an unknown one, and attackers write nothing."""
    record_write(
        ctx=RequestContext.for_member(request, member),
        event_type=event_type,
        resource_type="member",
        resource_id=member.id,
        status_code=200,
    )


def complete_sign_in(request: HttpRequest, member: Member, device: TOTPDevice | None) -> None:
    """A fresh session for the member (a new key: no fixation), verified by `device` when given."""
    request.session.pop(PENDING, None)
    request.session.pop(PENDING_EMAIL, None)
    login(request, member.user, backend="django.contrib.auth.backends.ModelBackend")
    if device is not None:
        otp_login(request, device)
    request.session[GENERATION] = member.session_generation
    request.session[NEEDS_CODE] = device is not None or member.role == Role.OWNER
    audit_member(request, member, "member.signed_in")


def sign_out_everywhere(member: Member) -> None:
    Member.objects.filter(pk=member.pk).update(session_generation=F("session_generation") + 1)


def member_view(action: str = READ, *, read: str = READ):
    """A dashboard page: a signed-in member of this session's generation, verified by a code where one is
    due; a write the member's role does not allow is 403 and changes nothing. GETs need `read` (READ: every
    member; the keys and settings pages ask more, to read them too)."""

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
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def owned(queryset, request: HttpRequest, pk: str, what: str):
    """The signed-in member's organization's record `pk` of `queryset`, else 404 as if it did not exist:
    every record page starts here, whatever id is in the URL."""
    found = queryset.filter(organization=request.member.organization, pk=pk).first()  # type: ignore[attr-defined]
    if found is None:
        raise Http404(f"There is no such {what}.")
    return found
