"""Request facts shared by both interfaces: the client IP and the request context."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from django.http import HttpRequest

    from platform_api.models import ApiKey, Organization


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


@dataclass(frozen=True)
class RequestContext:
    """Who made a request and how: passed to services so they can audit what they write."""

    organization: Organization | None
    api_key: ApiKey | None
    ip_address: str
    method: str
    path: str

    @classmethod
    def from_request(cls, request) -> RequestContext:
        api_key = getattr(request, "auth", None)
        return cls(
            organization=api_key.organization if api_key is not None else None,
            api_key=api_key,
            ip_address=client_ip(request),
            method=request.method,
            path=request.path,
        )
