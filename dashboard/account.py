"""A member's own account: setting up the second factor, replacing it, and recovery codes.

An authenticator is set up with the password alone only while the member has none (an owner's first sign-in,
or a member turning it on). Once one is confirmed, whoever has only the password reaches the code step and
nothing else; replacing the authenticator or making new recovery codes needs a signed-in session and a
second factor given in the last DASHBOARD_REAUTH_SECONDS (the current code, or a recovery code, typed into
the form or at sign-in just before). Recovery codes are shown once, at set-up and when made anew.
"""

from __future__ import annotations

from base64 import b32encode

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from django_otp.plugins.otp_totp.models import TOTPDevice

from checkout.display import qr_svg
from dashboard import auth, throttle
from dashboard.models import Member, RecoveryCodes, Role, recovery_digest
from platform_api.audit_names import AuditName
from webhooks.kinds import EmailKind
from webhooks.notifications import queue

FLASH = "dashboard_account_flash"
NEW_CODES = "dashboard_recovery_codes"  # shown once, on the next page


class CodeForm(forms.Form):
    """The second factor: the authenticator's 6 digits, or (`recovery`) one of the member's recovery codes."""

    code = forms.CharField(
        max_length=32,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "autocapitalize": "none"}),
    )

    def __init__(self, *args, recovery: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.recovery = recovery

    def clean_code(self) -> str:
        typed = "".join(self.cleaned_data["code"].split())
        if typed.isdigit() and len(typed) == 6:
            return typed
        if self.recovery and recovery_digest(typed) is not None:
            return typed
        if self.recovery:
            raise forms.ValidationError(
                "Enter the 6 digits your authenticator app shows, or one of your recovery codes."
            )
        raise forms.ValidationError("Enter the 6 digits your authenticator app shows.")


class ReplaceForm(forms.Form):
    """A new authenticator: its first code, and (unless given just before) the current second factor."""

    current = forms.CharField(max_length=32, required=False)
    code = forms.RegexField(
        regex=r"^\s*\d{6}\s*$",
        error_messages={"invalid": "Enter the 6 digits the new authenticator shows."},
    )


def refused_message(refused: auth.SignInRefused) -> str:
    if refused.scope == "address":
        return f"Too many failed sign-ins from your network. Try again in {refused.retry_after} s."
    return f"Too many failed attempts for this account. Try again in {refused.retry_after} s."


def pending_member(request: HttpRequest) -> Member | None:
    """The member whose password this browser gave, whose second factor is due."""
    member_id = request.session.get(auth.PENDING)
    return Member.objects.select_related("user").filter(pk=member_id).first() if member_id else None


def signed_in_to(request: HttpRequest, member: Member, device, target: str) -> HttpResponse:
    """Sign the member in (verified by `device`, if any) and go to `target`; this browser is known for the
    member's account from now on (dashboard.throttle)."""
    auth.complete_sign_in(request, member, device)
    response = redirect(target)
    throttle.remember_device(request, response, member.user.username)
    return response


def recovery_code_used(device: RecoveryCodes) -> str:
    left = device.remaining()
    return (
        f"You signed in with a recovery code; {left} of them left. If you lost your authenticator, set up a "
        "new one below" + (", and make new recovery codes." if left < 4 else ".")
    )


def spaced_key(key: bytes) -> str:
    text = b32encode(key).decode().rstrip("=")
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))


def _new_device(member: Member) -> TOTPDevice:
    """The authenticator being set up: an unconfirmed device, the same one until it is confirmed."""
    device = TOTPDevice.objects.filter(user=member.user, confirmed=False).order_by("id").first()
    return device or TOTPDevice.objects.create(user=member.user, confirmed=False, name="authenticator")


def _signed_in_member(request: HttpRequest) -> Member | None:
    """The member this session is signed in as, if its generation is current."""
    if not request.user.is_authenticated:
        return None
    member = Member.objects.select_related("user", "organization").filter(user_id=request.user.pk).first()
    if member is None or request.session.get(auth.GENERATION) != member.session_generation:
        return None
    return member


def _tell_member(member: Member, subject: str, what: str) -> None:
    """An email to the member about their own account's security (through the notification outbox)."""
    queue(
        organization=member.organization,
        event=None,
        event_type=EmailKind.MEMBER_SECURITY,
        to=member.user.email,
        subject=subject,
        body=render_to_string("dashboard/email/security.txt", {"member": member, "what": what}),
    )


@never_cache
@require_http_methods(["GET", "POST"])
def two_factor(request: HttpRequest) -> HttpResponse:
    """Set up a first authenticator: an owner at their first sign-in (the password given, pending), or a
    signed-in member who has none. Whoever has one already goes to the code step or their account page."""
    pending = pending_member(request)
    member = pending or _signed_in_member(request)
    if member is None:
        return redirect("dashboard:sign-in")
    if auth.confirmed_device(member) is not None:
        return redirect("dashboard:sign-in-code" if pending else "dashboard:account")
    device = _new_device(member)
    form = CodeForm(request.POST or None, recovery=False)
    status = 200
    if request.method == "POST":
        status = 400
        attempt = auth.Attempt(request, member.user.username)
        try:
            attempt.check()
        except auth.SignInRefused as refused:
            form.add_error(None, refused_message(refused))
            status = 429
        else:
            if form.is_valid() and device.verify_token(form.cleaned_data["code"]):
                codes = auth.authenticator_confirm(member=member, device=device)
                auth.audit_member(request, member, AuditName.MEMBER_TWO_FACTOR_ENABLED)
                target = request.session.get("dashboard_next", "/dashboard/") if pending else "/dashboard/"
                response = signed_in_to(request, member, device, "/dashboard/account/recovery-codes/")
                request.session[NEW_CODES] = {"codes": codes or [], "next": target}
                return response
            if form.is_valid():
                attempt.failed()
                form.add_error(
                    "code", "That code is not the current one. Check the app's clock and try again."
                )
    return render(
        request,
        "dashboard/two_factor.html",
        {
            "form": form,
            "member": None if pending else member,
            "required": member.role == Role.OWNER,
            "qr": qr_svg(device.config_url),
            "secret": spaced_key(device.bin_key),
        },
        status=status,
    )


@never_cache
@auth.member_view(modes=False)
def recovery_codes_shown(request: HttpRequest) -> HttpResponse:
    """The recovery codes just made, shown this once."""
    shown = request.session.pop(NEW_CODES, None)
    if not shown or not shown.get("codes"):
        return redirect((shown or {}).get("next") or "dashboard:account")
    return render(
        request,
        "dashboard/recovery_codes.html",
        {"member": request.member, "codes": shown["codes"], "next": shown.get("next") or "/dashboard/"},
    )


@never_cache
@require_http_methods(["GET", "POST"])
@auth.member_view(modes=False)
def account_page(request: HttpRequest) -> HttpResponse:
    """The member's account: the second factor (replace the authenticator), recovery codes."""
    member = request.member
    current = auth.confirmed_device(member)
    if current is None:
        return redirect("dashboard:two-factor")
    device = _new_device(member)
    form = ReplaceForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            proven = _proven(request, member, form, "current")
            if proven is not None:
                status = proven
            elif not device.verify_token(form.cleaned_data["code"].strip()):
                form.add_error("code", "That is not the code the new authenticator shows. Check its clock.")
            else:
                auth.authenticator_confirm(member=member, device=device)
                auth.sign_out_everywhere(member)  # sessions verified by the old one end
                auth.audit_member(request, member, AuditName.MEMBER_TWO_FACTOR_REPLACED)
                _tell_member(member, "Your dashboard authenticator was replaced", "authenticator replaced")
                response = signed_in_to(request, member, device, "/dashboard/account/")
                request.session[FLASH] = "Your new authenticator is set up; the old one no longer works."
                return response
    codes = auth.recovery_codes(member)
    return render(
        request,
        "dashboard/account.html",
        {
            "member": member,
            "form": form,
            "flash": request.session.pop(FLASH, None),
            "ask_current": not auth.recently_proven(request),
            "recovery_left": codes.remaining() if codes else 0,
            "qr": qr_svg(device.config_url),
            "secret": spaced_key(device.bin_key),
            "nav": "account",
        },
        status=status,
    )


def _proven(request: HttpRequest, member: Member, form: forms.Form, field: str) -> int | None:
    """None when the session gave a second factor just now or `field` holds one; else the error is on the
    form and the status to answer with."""
    if auth.recently_proven(request):
        return None
    typed = "".join(form.cleaned_data.get(field, "").split())
    if not typed:
        form.add_error(field, "Enter a code from your current authenticator, or a recovery code.")
        return 400
    try:
        if auth.prove(request, member, typed) is None:
            form.add_error(field, "That code is not the current one (or that recovery code was used).")
            return 400
    except auth.SignInRefused as refused:
        form.add_error(field, refused_message(refused))
        return 429
    return None


class ProofForm(forms.Form):
    current = forms.CharField(max_length=32, required=False)


@never_cache
@require_POST
@auth.member_view(modes=False)
def recovery_codes_new(request: HttpRequest) -> HttpResponse:
    """New recovery codes (the earlier ones stop working), after a second factor."""
    member = request.member
    form = ProofForm(request.POST)
    form.is_valid()
    if auth.confirmed_device(member) is None:
        return redirect("dashboard:two-factor")
    if _proven(request, member, form, "current") is not None:
        request.session[FLASH] = form.errors["current"][0]
        return redirect("dashboard:account")
    codes = auth.recovery_codes_issue(member=member)
    auth.audit_member(request, member, AuditName.MEMBER_RECOVERY_CODES_ISSUED)
    _tell_member(member, "New recovery codes for your dashboard account", "recovery codes made anew")
    request.session[NEW_CODES] = {"codes": codes, "next": "/dashboard/account/"}
    return redirect("dashboard:recovery-codes")
