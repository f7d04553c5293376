"""How failed sign-ins are limited, so that guessing is slow and the member is never locked out by it.

Three counters, each over the last DASHBOARD_SIGNIN_WINDOW_SECONDS (15 minutes), as OWASP's "device cookies"
and django-axes describe:

- **Per client IP, across accounts**: past DASHBOARD_SIGNIN_FAILURES_PER_IP failed passwords or codes from
  one address (whatever the emails), that address waits before signing in again from a browser it has not
  signed in from. A password spray from one address stops there.
- **Per account, from unknown browsers**: the first DASHBOARD_SIGNIN_FREE_FAILURES failures cost nothing;
  each further one makes the next attempt wait twice as long (1 s, 2 s, 4 s... at most
  DASHBOARD_SIGNIN_MAX_DELAY_SECONDS). Guessing slows to a few tries an hour; nobody is locked out for good.
- **Per known browser**: a browser that signed in as the member before carries a signed device cookie for
  that member. Its attempts skip both counters above (what strangers send never refuses it) and are
  counted on their own: past DASHBOARD_SIGNIN_FAILURES_PER_DEVICE failures, the cookie stops counting as
  known for the rest of the window.

A refused attempt is answered 429 before the password is checked, with the wait in seconds; it is not
counted. Emails and addresses are kept only as keyed digests.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse

from core.crypto import blind_index
from core.http import client_ip, ip_digest
from platform_api import ratelimit

DEVICE_COOKIE = "dashboard_device"
DEVICE_SALT = "dashboard.device"
DEVICES_KEPT = 5  # members remembered by one browser
COUNTING = 10_000  # a counter's limit where it only counts


class SignInRefused(Exception):
    """Too many failures just now; `retry_after` seconds; `scope` says whose: "account" or "address"."""

    def __init__(self, retry_after: int, scope: str = "account"):
        super().__init__(retry_after)
        self.retry_after = retry_after
        self.scope = scope


def normalise_email(email: str) -> str:
    return email.strip().lower()


def account_key(email: str) -> str:
    return blind_index(normalise_email(email), purpose="dashboard-signin")


def _window() -> int:
    return settings.DASHBOARD_SIGNIN_WINDOW_SECONDS


def _account_bucket(email: str) -> str:
    return f"dashboard-signin:{account_key(email)}"


def _address_bucket(request: HttpRequest) -> str:
    return f"dashboard-signin-ip:{ip_digest(client_ip(request))}"


def _device_bucket(nonce: str) -> str:
    return f"dashboard-signin-device:{nonce}"


def _known_devices(request: HttpRequest) -> dict[str, str]:
    """account key -> nonce, from the browser's signed device cookie ({} when absent or forged)."""
    raw = request.COOKIES.get(DEVICE_COOKIE)
    if not raw:
        return {}
    try:
        found = signing.loads(raw, salt=DEVICE_SALT, max_age=settings.DASHBOARD_DEVICE_COOKIE_DAYS * 86400)
    except signing.BadSignature:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


@dataclass(frozen=True)
class Attempt:
    """One sign-in attempt for `email` from this request's browser and address."""

    request: HttpRequest
    email: str

    @property
    def device_nonce(self) -> str | None:
        """The browser's device nonce for this account, if it signed in as it before and has not failed
        too often since."""
        nonce = _known_devices(self.request).get(account_key(self.email))
        if nonce is None:
            return None
        if not ratelimit.peek(
            _device_bucket(nonce), settings.DASHBOARD_SIGNIN_FAILURES_PER_DEVICE, window=_window()
        ).allowed:
            return None
        return nonce

    def check(self) -> None:
        """SignInRefused when this attempt must wait."""
        if self.device_nonce is not None:
            return  # a browser the member signed in from: what others sent does not hold it back
        address = ratelimit.peek(
            _address_bucket(self.request), settings.DASHBOARD_SIGNIN_FAILURES_PER_IP, window=_window()
        )
        if not address.allowed:
            raise SignInRefused(address.retry_after, scope="address")
        wait = account_delay(self.email)
        if wait:
            raise SignInRefused(wait)

    def failed(self) -> None:
        """A wrong password or code: counted for this browser if it is known, else for the account and the
        address."""
        nonce = self.device_nonce
        if nonce is not None:
            ratelimit.hit(_device_bucket(nonce), COUNTING, window=_window())
            return
        ratelimit.hit(_account_bucket(self.email), COUNTING, window=_window())
        ratelimit.hit(_address_bucket(self.request), COUNTING, window=_window())


def account_delay(email: str, now: float | None = None) -> int:
    """Seconds an unknown browser waits before its next attempt for this account (0: it may try now)."""
    now = ratelimit.now() if now is None else now
    counted = ratelimit.peek(_account_bucket(email), COUNTING, now=now, window=_window())
    over = counted.count - settings.DASHBOARD_SIGNIN_FREE_FAILURES
    if over < 0 or counted.newest is None:
        return 0
    delay = min(2**over, settings.DASHBOARD_SIGNIN_MAX_DELAY_SECONDS)
    return max(0, math.ceil(counted.newest + delay - now))


def remember_device(request: HttpRequest, response: HttpResponse, email: str) -> None:
    """The member signed in from this browser: it is a known browser for their account from now on."""
    devices = _known_devices(request)
    devices.pop(account_key(email), None)
    devices[account_key(email)] = secrets.token_urlsafe(16)
    kept = dict(list(devices.items())[-DEVICES_KEPT:])
    response.set_cookie(
        DEVICE_COOKIE,
        signing.dumps(kept, salt=DEVICE_SALT),
        max_age=settings.DASHBOARD_DEVICE_COOKIE_DAYS * 86400,
        path="/dashboard/",
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def password_reset_allowed(request: HttpRequest, email: str) -> bool:
    """Whether a password-reset email may be sent now: at most DASHBOARD_PASSWORD_RESETS_PER_EMAIL an hour
    for one address and DASHBOARD_PASSWORD_RESETS_PER_IP an hour from one client (each try counts)."""
    by_address = ratelimit.hit(
        f"dashboard-reset-ip:{ip_digest(client_ip(request))}",
        settings.DASHBOARD_PASSWORD_RESETS_PER_IP,
        window=3600,
    )
    if not by_address.allowed:
        return False
    return ratelimit.hit(
        f"dashboard-reset:{account_key(email)}", settings.DASHBOARD_PASSWORD_RESETS_PER_EMAIL, window=3600
    ).allowed
