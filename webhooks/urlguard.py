"""SSRF protection for webhook URLs: checked when saved, and again on the socket when connecting.

Only public addresses are reachable. Plain HTTP, and loopback addresses, are
allowed for localhost / 127.0.0.1 / ::1 in development (WEBHOOK_ALLOW_LOCALHOST).
The connect-time check looks at the address the socket actually reached, so a
DNS answer that changes after the URL was saved (rebinding) cannot get through.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}


class UnsafeWebhookUrl(ValueError):
    """The URL, or the address it leads to, is not allowed."""


def address_allowed(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address.is_loopback:
        return settings.WEBHOOK_ALLOW_LOCALHOST
    # is_global excludes private, link-local, CGNAT (100.64/10), documentation,
    # benchmarking and reserved ranges; multicast is excluded explicitly.
    return address.is_global and not address.is_multicast


def validate_webhook_url(url: str, *, resolve: bool = True) -> None:
    """Raise UnsafeWebhookUrl unless `url` may receive webhooks."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeWebhookUrl("The URL is not valid.") from exc
    host = (parts.hostname or "").lower()
    if not host:
        raise UnsafeWebhookUrl("The URL needs a host.")
    if parts.username or parts.password:
        raise UnsafeWebhookUrl("The URL must not contain credentials.")
    local = host in LOCAL_HOSTS
    if parts.scheme != "https" and not (
        parts.scheme == "http" and local and settings.WEBHOOK_ALLOW_LOCALHOST
    ):
        raise UnsafeWebhookUrl(
            "The URL must use https (plain http only to localhost, and only in development)."
        )
    if local and not settings.WEBHOOK_ALLOW_LOCALHOST:
        raise UnsafeWebhookUrl("The URL must point to a public host.")
    if not resolve:
        return
    try:
        infos = socket.getaddrinfo(
            host, port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeWebhookUrl(f"The host '{host}' does not resolve.") from exc
    for info in infos:
        if not address_allowed(str(info[4][0])):
            raise UnsafeWebhookUrl("The URL resolves to a private, loopback or otherwise non-public address.")


def _checked(sock: socket.socket) -> socket.socket:
    peer = sock.getpeername()[0]
    if not address_allowed(peer):
        sock.close()
        raise UnsafeWebhookUrl(f"Refused to connect to non-public address {peer}.")
    return sock


class _GuardedHTTPConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return _checked(super()._new_conn())


class _GuardedHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return _checked(super()._new_conn())


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """A requests adapter whose every connection is checked against the allowed addresses."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _GuardedHTTPPool, "https": _GuardedHTTPSPool}
