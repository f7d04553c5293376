"""SSRF protection for webhook URLs, when saved; `core.safehttp` checks again before every connection.

Only https to hosts whose every address is public is accepted. Plain HTTP and
loopback addresses are allowed only to localhost / 127.0.0.1 / ::1 in
development (WEBHOOK_ALLOW_LOCALHOST). The address policy is `core.netguard`.
"""

from __future__ import annotations

from django.conf import settings

from core.safehttp import UnsafeUrl, parse_target, resolve_checked

UnsafeWebhookUrl = UnsafeUrl
SAVE_TIME_LOOKUP_SECONDS = 5.0


def validate_webhook_url(url: str, *, resolve: bool = True) -> None:
    """Raise UnsafeWebhookUrl unless `url` may receive webhooks."""
    allow_loopback = settings.WEBHOOK_ALLOW_LOCALHOST
    target = parse_target(url, allow_http_loopback=allow_loopback)
    if not resolve:
        return
    try:
        resolve_checked(
            target.host, target.port, allow_loopback=allow_loopback, timeout=SAVE_TIME_LOOKUP_SECONDS
        )
    except TimeoutError as exc:
        raise UnsafeWebhookUrl(f"The host '{target.host}' could not be looked up in time.") from exc
