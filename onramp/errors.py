"""What can go wrong talking to an onramp vendor, as domain errors."""

from collections.abc import Callable
from typing import Any

import requests

from core.errors import InvalidRequest, NotConfigured, UpstreamError


def not_configured(vendor: str, settings_names: list[str]) -> NotConfigured:
    return NotConfigured(f"{vendor} is not configured on this service: set {', '.join(settings_names)}.")


def vendor_unavailable(vendor: str) -> UpstreamError:
    return UpstreamError(f"{vendor} is unavailable right now; retry shortly.")


def vendor_refused(vendor: str, reason: str | None) -> InvalidRequest:
    return InvalidRequest(f"{vendor} refused the request: {reason or 'no reason given'}.")


def vendor_json(vendor: str, send: Callable[[], requests.Response], reason_of: Callable[[Any], Any]) -> Any:
    """Send a request and return its JSON body; a refusal (4xx but 429) is 400, anything else wrong 502."""
    try:
        response = send()
    except requests.RequestException as exc:
        raise vendor_unavailable(vendor) from exc
    if 400 <= response.status_code < 500 and response.status_code != 429:
        try:
            reason = reason_of(response.json())
        except (ValueError, AttributeError, TypeError):
            reason = None
        raise vendor_refused(vendor, str(reason)[:300] if reason else None)
    if response.status_code != 200:
        raise vendor_unavailable(vendor)
    try:
        return response.json()
    except ValueError as exc:
        raise vendor_unavailable(vendor) from exc
