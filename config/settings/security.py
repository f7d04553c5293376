"""Security: admin sign-in limits, production HTTPS and headers, the Content-Security-Policy, trusted
proxies, and the key that encrypts secrets at rest."""

from __future__ import annotations

import os
from datetime import timedelta

from csp.constants import NONCE as CSP_NONCE
from django.core.exceptions import ImproperlyConfigured

from config.settings.django import DEVELOPMENT
from config.settings.env import env_bool, env_int

# --- Sign-in to the admin (django-axes; core/signin.py) ----------------------

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses a locked-out address before the password is checked
    "django.contrib.auth.backends.ModelBackend",
]
ADMIN_SIGNIN_FAILURES_PER_IP = env_int("ADMIN_SIGNIN_FAILURES_PER_IP", 10)
ADMIN_SIGNIN_FAILURES_PER_ACCOUNT = env_int("ADMIN_SIGNIN_FAILURES_PER_ACCOUNT", 20)
ADMIN_SIGNIN_COOLOFF_MINUTES = env_int("ADMIN_SIGNIN_COOLOFF_MINUTES", 15)
# The merchant dashboard's sign-in limits (dashboard/throttle.py), each over the last
# DASHBOARD_SIGNIN_WINDOW_SECONDS: failures from one client IP across accounts before that address waits;
# failures of one account from unknown browsers before each next attempt waits twice as long as the last
# (at most DASHBOARD_SIGNIN_MAX_DELAY_SECONDS); failures from a browser the member signed in from before
# (its device cookie, kept DASHBOARD_DEVICE_COOKIE_DAYS) before it counts as unknown. Password-reset emails
# per address and per client IP an hour. The session cookie is HttpOnly, SameSite=Lax, Secure in production.
DASHBOARD_SIGNIN_WINDOW_SECONDS = env_int("DASHBOARD_SIGNIN_WINDOW_SECONDS", 900)
DASHBOARD_SIGNIN_FAILURES_PER_IP = env_int("DASHBOARD_SIGNIN_FAILURES_PER_IP", 30)
DASHBOARD_SIGNIN_FREE_FAILURES = env_int("DASHBOARD_SIGNIN_FREE_FAILURES", 5)
DASHBOARD_SIGNIN_MAX_DELAY_SECONDS = env_int("DASHBOARD_SIGNIN_MAX_DELAY_SECONDS", 300)
DASHBOARD_SIGNIN_FAILURES_PER_DEVICE = env_int("DASHBOARD_SIGNIN_FAILURES_PER_DEVICE", 10)
DASHBOARD_DEVICE_COOKIE_DAYS = env_int("DASHBOARD_DEVICE_COOKIE_DAYS", 365)
DASHBOARD_PASSWORD_RESETS_PER_EMAIL = env_int("DASHBOARD_PASSWORD_RESETS_PER_EMAIL", 3)
DASHBOARD_PASSWORD_RESETS_PER_IP = env_int("DASHBOARD_PASSWORD_RESETS_PER_IP", 10)
# How long a code (or recovery code) just given proves the member is at the keyboard, for what asks again.
DASHBOARD_REAUTH_SECONDS = env_int("DASHBOARD_REAUTH_SECONDS", 300)
DASHBOARD_INVITATION_HOURS = env_int("DASHBOARD_INVITATION_HOURS", 72)  # how long an invitation link works
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_HTTPONLY = True
AXES_HANDLER = "core.signin.SignInGuard"
AXES_FAILURE_LIMIT = ADMIN_SIGNIN_FAILURES_PER_IP
AXES_LOCKOUT_PARAMETERS = ["ip_address", ["username", "ip_address"]]
AXES_COOLOFF_TIME = timedelta(minutes=ADMIN_SIGNIN_COOLOFF_MINUTES)
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_CLIENT_IP_CALLABLE = "core.http.client_ip"  # the same client IP as everywhere (TRUSTED_PROXY_COUNT)
AXES_SENSITIVE_PARAMETERS = ["password"]
AXES_VERBOSE = False

# --- Security (production) ---------------------------------------------------

SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("DJANGO_BEHIND_TLS_PROXY", False) else None
)
if not DEVELOPMENT:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]  # a balancer's probes, over plain HTTP
    SESSION_COOKIE_SECURE = True
    LANGUAGE_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Every response carries a Content-Security-Policy (django-csp): nothing from another origin, no inline script
# or style but what carries the request's nonce (the hosted page's and widgets' own), no plugins, no <base>,
# forms only to this origin, and no framing but the widget page's (checkout/widget_page.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", CSP_NONCE],
        "style-src": ["'self'", CSP_NONCE],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# How many reverse proxies in front of the service append to X-Forwarded-For.
# 0 (default): the client IP is REMOTE_ADDR and X-Forwarded-For is ignored,
# because a payer could otherwise choose the IP we rate-limit and record.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

# 32 bytes, URL-safe base64: encrypts secrets at rest (webhook endpoint secrets, stored idempotent
# responses). Required in production. WEBHOOK_SECRET_KEY is its earlier name and still read.
ENCRYPTION_KEY = os.environ.get("ENCRYPTION_KEY") or os.environ.get("WEBHOOK_SECRET_KEY", "")
if not ENCRYPTION_KEY and not DEVELOPMENT:
    raise ImproperlyConfigured(
        "ENCRYPTION_KEY must be set in production: 32 random bytes, URL-safe base64 "
        '(python -c "import base64,os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())").'
    )
