"""The staff's admin site: a password and a second factor, as dashboard owners sign in.

Staff can refund, resolve incidents and reconcile: the admin is django-otp's admin site, which admits only
a session verified by one of the user's devices (a TOTP authenticator, or one of their recovery codes).
The sign-in form asks for the code beside the password; failed passwords stay limited by django-axes
(core/signin.py) and failed codes by the device's own growing delay. A staff user sets up an authenticator
on a server, where they made their account: `manage.py staff_two_factor <username>`.
"""

from __future__ import annotations

from django import forms
from django_otp import devices_for_user
from django_otp.admin import OTPAdminAuthenticationForm, OTPAdminSite
from django_otp.plugins.otp_totp.models import TOTPDevice

from dashboard.models import RecoveryCodes, recovery_digest

NO_DEVICE = (
    "This account has no authenticator yet. On a server of this service, run "
    "`manage.py staff_two_factor <username>`, scan its code with an authenticator app, then sign in here "
    "with the code it shows."
)


class StaffSignInForm(OTPAdminAuthenticationForm):
    otp_token = forms.CharField(
        required=False,
        label="Code",
        max_length=32,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "autocapitalize": "none"}),
    )
    otp_error_messages = {
        **OTPAdminAuthenticationForm.otp_error_messages,
        "token_required": "Enter the 6-digit code your authenticator app shows (or a recovery code).",
        "invalid_token": "That code is not the current one, or it was used already: each code is accepted "
        "once (the one that confirmed your authenticator too), so wait for the next one (or use a recovery code).",
        "device_required": "That code is not the current one, or it was used already: each code is accepted "
        "once (the one that confirmed your authenticator too), so wait for the next one (or use a recovery code).",
    }

    def _chosen_device(self, user):
        """The device the code is for, by its shape: 6 digits the authenticator's, else a recovery code's
        (row locked while it checks: each code is accepted once). None: no device takes such a code."""
        code = "".join((self.cleaned_data.get("otp_token") or "").split())
        if code.isdigit() and len(code) == 6:
            model: type[TOTPDevice] | type[RecoveryCodes] = TOTPDevice
        elif recovery_digest(code) is not None:
            model = RecoveryCodes
        else:
            return None
        return model.objects.select_for_update().filter(user=user, confirmed=True).first()

    def clean_otp(self, user):
        if user is not None and not any(devices_for_user(user, confirmed=True)):
            raise forms.ValidationError(NO_DEVICE, code="no_device")
        super().clean_otp(user)


class StaffAdminSite(OTPAdminSite):
    login_form = StaffSignInForm
    login_template = "admin/staff_login.html"

    def __init__(self, name: str = "admin"):
        super().__init__(name)
