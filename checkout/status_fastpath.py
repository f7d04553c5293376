"""The hosted page's unchanged status poll, answered before Django.

During a surge nearly every poll names the session's current version (checkout.status_version) and gets
304. Through Django that costs its whole request cycle (middleware, URL resolution, the view) for one
Redis read; this WSGI wrapper answers it with the same read and nothing else, so a node serves several
times as many waiting payers. Anything else, including a poll without `If-None-Match`, one whose version
is not current or not in Redis, and every other path, goes to Django unchanged.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.utils.http import parse_etags

from checkout.status_version import status_peek
from observability import metrics
from observability.context import accepted_request_id

ROUTE = "pay-status"  # the route's name in checkout/urls.py, as Django's middleware labels it
STATUS_PATH = re.compile(r"^/pay/s/(cs_[A-Za-z0-9]{24})/status$")
HEADERS = [
    ("Cache-Control", "no-cache, private"),
    ("X-Content-Type-Options", "nosniff"),
    ("Content-Length", "0"),
]


class StatusNotModified:
    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        started = time.perf_counter()
        if environ.get("REQUEST_METHOD") == "GET" and environ.get("HTTP_IF_NONE_MATCH"):
            match = STATUS_PATH.match(environ.get("PATH_INFO", ""))
            version = status_peek(match.group(1)) if match else None
            if version is not None and f'"{version}"' in parse_etags(environ["HTTP_IF_NONE_MATCH"]):
                rid = accepted_request_id(environ.get("HTTP_X_REQUEST_ID"))
                start_response(
                    "304 Not Modified", [("ETag", f'"{version}"'), ("X-Request-ID", rid), *HEADERS]
                )
                # Counted as Django's middleware counts the same route (observability.middleware).
                metrics.http_requests.labels(ROUTE, "GET", "304").inc()
                metrics.http_duration.labels(ROUTE, "GET").observe(time.perf_counter() - started)
                return [b""]
        return self.app(environ, start_response)
