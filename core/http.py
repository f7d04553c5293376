"""Request facts shared by both interfaces: the client IP, and a keyed digest of it."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from django.http import HttpRequest


def _valid_ip(value: str) -> str | None:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def client_ip(request: HttpRequest) -> str:
    """The caller's IP address.

    X-Forwarded-For is believed only for the hops appended by the
    TRUSTED_PROXY_COUNT proxies in front of us; the left-most entries are
    whatever the client chose to send and are never trusted.
    """
    remote = request.META.get("REMOTE_ADDR", "") or ""
    hops = settings.TRUSTED_PROXY_COUNT
    if hops > 0:
        forwarded = [p.strip() for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if p.strip()]
        if len(forwarded) >= hops:
            candidate = _valid_ip(forwarded[-hops])
            if candidate:
                return candidate
    return _valid_ip(remote) or "0.0.0.0"  # noqa: S104 - a placeholder, never bound


def ip_digest(ip: str) -> str:
    """A keyed digest of an IP, for counters and idempotency scopes that must not store the IP itself."""
    return hmac.new(settings.SECRET_KEY.encode(), ip.encode(), hashlib.sha256).hexdigest()[:32]
