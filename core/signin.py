"""Failed sign-ins to the admin, limited per address and per account (django-axes, with one rule of ours).

Axes counts failed sign-ins per client IP (any account) and per (account,
IP); past ADMIN_SIGNIN_FAILURES_PER_IP in ADMIN_SIGNIN_COOLOFF_MINUTES, that
address gets 429 for every account, the right password included. Per account
we add: once an account has had ADMIN_SIGNIN_FAILURES_PER_ACCOUNT failures in
that time from anywhere (guesses spread over many addresses), an address that
has itself failed on it is refused too. An address that never sent a wrong
password for the account is never refused, so an attacker cannot lock its
owner out from elsewhere.
"""

from __future__ import annotations

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_ip_address, get_client_username, get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.utils import timezone


class SignInGuard(AxesDatabaseHandler):
    """Axes' database handler, plus the per-account rule above."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        failures = super().get_failures(request, credentials)
        username = get_client_username(request, credentials)
        if not failures or not username:
            return failures
        recent = AccessAttempt.objects.filter(username=username)
        if cool_off := get_cool_off(request):
            recent = recent.filter(attempt_time__gte=timezone.now() - cool_off)
        address = getattr(request, "axes_ip_address", None) or get_client_ip_address(request)
        if not recent.filter(ip_address=address).exists():
            return failures
        on_account = recent.aggregate(total=Sum("failures_since_start"))["total"] or 0
        if on_account >= settings.ADMIN_SIGNIN_FAILURES_PER_ACCOUNT:
            return max(failures, get_failure_limit(request, credentials))
        return failures
