"""The HTTP client every external-provider adapter uses: timeouts always, retries only where safe."""

from __future__ import annotations

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

RETRY_STATUSES = (429, 500, 502, 503, 504)


def build_session(
    *, retry_methods: frozenset[str] = frozenset({"GET", "POST"}), retries: int | None = None
) -> requests.Session:
    """A session that retries connection errors, 5xx and 429 with backoff (honouring Retry-After).

    Only pass POST in `retry_methods` for calls without side effects (quotes,
    reads over JSON-RPC); redirects are never followed by the callers.
    """
    retry = Retry(
        total=settings.PROVIDER_MAX_RETRIES if retries is None else retries,
        backoff_factor=0.2,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=retry_methods,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
