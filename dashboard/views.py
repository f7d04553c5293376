"""Signing in and out of the dashboard, invitations and password resets (dashboard.auth has the rules; the
second factor's set-up and recovery are in dashboard.account)."""

from __future__ import annotations

from django import forms
from django.contrib.auth import logout
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from dashboard import account, auth, members, throttle
from dashboard.account import CodeForm, pending_member, refused_message, signed_in_to
from dashboard.models import Member, RecoveryCodes, Role
from platform_api.audit_names import AuditName

REFUSED = "That email and password do not match a member."  # never says which of the two was wrong


class SignInForm(forms.Form):
    email = forms.EmailField(max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "username"}))
    password = forms.CharField(
        max_length=1024, strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )


def _next(request: HttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target if target.startswith("/dashboard/") else "/dashboard/"
    return "/dashboard/"


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
                member = auth.password_member(auth.Attempt(request, email), form.cleaned_data["password"])
            except auth.SignInRefused as refused:
                form.add_error(None, refused_message(refused))
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
    return signed_in_to(request, member, None, _next(request))


@never_cache
@require_http_methods(["GET", "POST"])
def sign_in_code(request: HttpRequest) -> HttpResponse:
    member = pending_member(request)
    if member is None:
        return redirect("dashboard:sign-in")
    if auth.confirmed_device(member) is None:
        return redirect("dashboard:two-factor")  # an owner who has none yet sets one up
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            attempt = auth.Attempt(request, request.session[auth.PENDING_EMAIL])
            try:
                device = auth.code_member(attempt, member, form.cleaned_data["code"])
            except auth.SignInRefused as refused:
                form.add_error("code", refused_message(refused))
                status = 429
            else:
                if isinstance(device, RecoveryCodes):
                    response = signed_in_to(request, member, device, reverse("dashboard:account"))
                    auth.audit_member(request, member, AuditName.MEMBER_RECOVERY_CODE_USED)
                    request.session[account.FLASH] = account.recovery_code_used(device)
                    return response
                if device is not None:
                    return signed_in_to(
                        request, member, device, request.session.get("dashboard_next", "/dashboard/")
                    )
                form.add_error(
                    "code",
                    "That code is not the current one (or that recovery code was used). Try the next code "
                    "your app shows.",
                )
    return render(request, "dashboard/sign_in_code.html", {"form": form}, status=status)


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("dashboard:sign-in")


@require_POST
@auth.member_view()
def sign_out_everywhere(request: HttpRequest) -> HttpResponse:
    auth.sign_out_everywhere(request.member)
    auth.audit_member(request, request.member, AuditName.MEMBER_SIGNED_OUT_EVERYWHERE)
    logout(request)
    return redirect("dashboard:sign-in")


@require_POST
@auth.member_view(modes=False)
def test_mode_switch(request: HttpRequest) -> HttpResponse:
    """The test-mode switch: the pages (but the team and the member's account) show and change the
    organization's test mode, made on first use: its own payments, links, customers, keys (svc_test_) and
    webhooks, on test chains only (platform_api.testmode)."""
    if request.POST.get("on") == "1":
        request.session[auth.TEST_MODE] = True
    else:
        request.session.pop(auth.TEST_MODE, None)
    return redirect(_next(request))


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
                auth.audit_member(request, member, AuditName.MEMBER_JOINED)
                return _after_password(request, member, member.user.username)
    return render(request, "dashboard/invitation.html", {"form": form, "invitation": found}, status=status)


class PasswordReset(auth_views.PasswordResetView):
    """Django's: the same answer whether the email has an account or not; an email is sent at most
    DASHBOARD_PASSWORD_RESETS_PER_EMAIL times an hour per address and DASHBOARD_PASSWORD_RESETS_PER_IP per
    client (past that the page says the same, and nothing is sent)."""

    def form_valid(self, form):
        if throttle.password_reset_allowed(self.request, form.cleaned_data["email"]):
            return super().form_valid(form)
        return redirect(self.get_success_url())


class PasswordResetConfirm(auth_views.PasswordResetConfirmView):
    """Django's: the emailed link sets a new password once (which ends the member's other sessions, their
    password hash being part of each); the reset is audited with the member as the actor."""

    def form_valid(self, form):
        response = super().form_valid(form)
        member = Member.objects.select_related("organization").filter(user_id=form.user.pk).first()
        if member is not None:
            auth.audit_member(self.request, member, AuditName.MEMBER_PASSWORD_RESET)
        return response
