"""Signing in and out of the dashboard, and the two-factor setup (dashboard.auth has the rules)."""

from __future__ import annotations

from django import forms
from django.contrib.auth import logout
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from django_otp.plugins.otp_totp.models import TOTPDevice

from checkout.display import qr_svg
from dashboard import auth, members
from dashboard.models import Member, Role

REFUSED = "That email and password do not match a member."  # never says which of the two was wrong


class SignInForm(forms.Form):
    email = forms.EmailField(max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "username"}))
    password = forms.CharField(
        max_length=1024, strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )


class CodeForm(forms.Form):
    code = forms.RegexField(
        regex=r"^\s*\d{6}\s*$",
        error_messages={"invalid": "Enter the 6 digits your authenticator app shows."},
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}),
    )


def _next(request: HttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target if target.startswith("/dashboard/") else "/dashboard/"
    return "/dashboard/"


def _pending(request: HttpRequest) -> Member | None:
    member_id = request.session.get(auth.PENDING)
    return Member.objects.select_related("user").filter(pk=member_id).first() if member_id else None


@never_cache
@require_http_methods(["GET", "POST"])
def sign_in(request: HttpRequest) -> HttpResponse:
    form = SignInForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            email = form.cleaned_data["email"]
            try:
                member = auth.password_member(email, form.cleaned_data["password"])
            except auth.SignInRefused as refused:
                form.add_error(
                    None, f"Too many failed sign-ins for this email. Try again in {refused.retry_after} s."
                )
                status = 429
            else:
                if member is None:
                    form.add_error(None, REFUSED)
                else:
                    return _after_password(request, member, email)
    return render(request, "dashboard/sign_in.html", {"form": form, "next": _next(request)}, status=status)


def _after_password(request: HttpRequest, member: Member, email: str) -> HttpResponse:
    if auth.confirmed_device(member) is not None or member.role == Role.OWNER:
        logout(request)  # whoever this browser was signed in as, it is no one until the code is given
        request.session[auth.PENDING] = member.id
        request.session[auth.PENDING_EMAIL] = auth.normalise_email(email)
        request.session["dashboard_next"] = _next(request)
        if auth.confirmed_device(member) is None:
            return redirect("dashboard:two-factor")
        return redirect("dashboard:sign-in-code")
    auth.complete_sign_in(request, member, None)
    return redirect(_next(request))


@never_cache
@require_http_methods(["GET", "POST"])
def sign_in_code(request: HttpRequest) -> HttpResponse:
    member = _pending(request)
    if member is None:
        return redirect("dashboard:sign-in")
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                device = auth.code_member(
                    request.session[auth.PENDING_EMAIL], member, form.cleaned_data["code"]
                )
            except auth.SignInRefused as refused:
                form.add_error("code", f"Too many failed attempts. Try again in {refused.retry_after} s.")
                status = 429
            else:
                if device is not None:
                    target = request.session.get("dashboard_next", "/dashboard/")
                    auth.complete_sign_in(request, member, device)
                    return redirect(target)
                form.add_error("code", "That code is not the current one. Try the next code your app shows.")
    return render(request, "dashboard/sign_in_code.html", {"form": form}, status=status)


@never_cache
@require_http_methods(["GET", "POST"])
def two_factor(request: HttpRequest) -> HttpResponse:
    """Set up an authenticator: for an owner signing in for the first time (pending), or a signed-in member."""
    member = _pending(request)
    signed_in = False
    if member is None and request.user.is_authenticated:
        member = Member.objects.select_related("user", "organization").filter(user_id=request.user.pk).first()
        signed_in = member is not None and request.session.get(auth.GENERATION) == member.session_generation
        if not signed_in:
            member = None
    if member is None:
        return redirect("dashboard:sign-in")
    if signed_in and auth.confirmed_device(member) is not None:  # one authenticator per member
        return redirect("dashboard:home")
    device, _ = TOTPDevice.objects.get_or_create(
        user=member.user, confirmed=False, defaults={"name": "authenticator"}
    )
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        email = member.user.username
        try:
            auth.check_not_throttled(email)
        except auth.SignInRefused as refused:
            form.add_error(None, f"Too many failed attempts. Try again in {refused.retry_after} s.")
            status = 429
        else:
            if form.is_valid() and device.verify_token(form.cleaned_data["code"].strip()):
                TOTPDevice.objects.filter(user=member.user, confirmed=True).delete()
                device.confirmed = True
                device.save(update_fields=["confirmed"])
                auth.audit_member(request, member, "member.two_factor_enabled")
                target = request.session.get("dashboard_next", "/dashboard/")
                auth.complete_sign_in(request, member, device)
                return redirect(target)
            if form.is_valid():
                auth.count_failure(email)
                form.add_error(
                    "code", "That code is not the current one. Check the app's clock and try again."
                )
    return render(
        request,
        "dashboard/two_factor.html",
        {
            "form": form,
            "member": member if signed_in else None,
            "required": member.role == Role.OWNER,
            "qr": qr_svg(device.config_url),
            "secret": _spaced(device.bin_key),
        },
        status=status,
    )


def _spaced(key: bytes) -> str:
    from base64 import b32encode

    text = b32encode(key).decode().rstrip("=")
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("dashboard:sign-in")


@require_POST
@auth.member_view()
def sign_out_everywhere(request: HttpRequest) -> HttpResponse:
    auth.sign_out_everywhere(request.member)
    auth.audit_member(request, request.member, "member.signed_out_everywhere")
    logout(request)
    return redirect("dashboard:sign-in")


class AcceptForm(forms.Form):
    password = forms.CharField(
        max_length=1024, strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    password_again = forms.CharField(
        max_length=1024, strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("password") and cleaned.get("password") != cleaned.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return cleaned


@never_cache
@require_http_methods(["GET", "POST"])
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link: choose a password, become a member, sign in (an owner sets up two-factor first)."""
    found = members.invitation_open(token)
    if found is None:
        return render(
            request,
            "dashboard/invitation.html",
            {
                "gone": "This invitation link was already used, was revoked, or has expired. Ask for a new one."
            },
            status=410,
        )
    form = AcceptForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                member = members.invitation_accept(token=token, password=form.cleaned_data["password"])
            except ValidationError as exc:
                form.add_error("password", exc)
            except members.MemberError as exc:
                return render(request, "dashboard/invitation.html", {"gone": str(exc)}, status=410)
            else:
                auth.audit_member(request, member, "member.joined")
                return _after_password(request, member, member.user.username)
    return render(request, "dashboard/invitation.html", {"form": form, "invitation": found}, status=status)


class PasswordResetConfirm(auth_views.PasswordResetConfirmView):
    """Django's: the emailed link sets a new password once (which ends the member's other sessions, their
    password hash being part of each); the reset is audited with the member as the actor."""

    def form_valid(self, form):
        response = super().form_valid(form)
        member = Member.objects.select_related("organization").filter(user_id=form.user.pk).first()
        if member is not None:
            auth.audit_member(self.request, member, "member.password_reset")
        return response
