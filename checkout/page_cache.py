"""The payer pages' HTML that is the same for every payer, rendered once per process.

The hosted link page and the widget pages are what a flash sale's payers open by the thousand; what they
show changes only when the merchant edits the link or widget. A page is cached under its template and a
key that includes the record's `updated_at` (read fresh on every request, so an edit shows on the next
view on every node), for TTL seconds at most, so that a token's or a chain's change reaches it too. The
parts that differ per request, the CSP nonce, the CSRF token, the time and the query string, are rendered
as marks and replaced in the cached text (`render_marked`, `fill_marks`); the deposit page is kept the same
way in Redis, per status version (checkout.status_version).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.html import escape

from checkout.languages import languages as languages_context
from checkout.languages import query_without_language

T = TypeVar("T")
TTL = 30.0
SIZE = 512


class _Pages(Generic[T]):
    def __init__(self) -> None:
        self._pages: OrderedDict[tuple, tuple[float, T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, render: Callable[[], T]) -> T:
        now = time.monotonic()
        with self._lock:
            found = self._pages.get(key)
            if found and found[0] > now:
                self._pages.move_to_end(key)
                return found[1]
        html = render()  # outside the lock: two threads may render the same page once each
        with self._lock:
            self._pages[key] = (now + TTL, html)
            while len(self._pages) > SIZE:
                self._pages.popitem(last=False)
        return html

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()


pages: _Pages[str] = _Pages()
# What a page shows of a record that changes only when its `updated_at` moves (a link's items), kept as pages.
parts: _Pages[Any] = _Pages()


def _mark(name: str) -> str:
    """A stand-in for what differs per request, the same in every process of the deployment (a page may be
    kept in the shared Redis) and unguessable (no merchant's text can carry it)."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"page-mark:{name}".encode(), hashlib.sha256).hexdigest()
    return f"{name}{digest[:24]}"


def render_marked(request: HttpRequest, template: str, context: dict[str, Any]) -> str:
    """`template` rendered with `context`, with marks in place of this request's nonce, CSRF token, time
    (`now_ms`) and query string, for `fill_marks` to put in when the page is served."""
    marks = {"request": {"csp_nonce": _mark("nonce")}, "csrf_token": _mark("csrf"), "now_ms": _mark("now")}
    return render_to_string(
        template, context | languages_context(request) | {"lang_query": _mark("query")} | marks
    )


def fill_marks(request: HttpRequest, html: str) -> str:
    """A marked page with this request's nonce, query string, time and CSRF token (only where it has them)."""
    html = html.replace(_mark("nonce"), str(request.csp_nonce))
    for name, value in (
        ("query", lambda: escape(query_without_language(request))),
        ("now", lambda: str(int(time.time() * 1000))),
        ("csrf", lambda: get_token(request)),
    ):
        if (mark := _mark(name)) in html:
            html = html.replace(mark, value())
    return html


def cached_page(
    request: HttpRequest, template: str, key: tuple, context: Callable[[], dict[str, Any]]
) -> str:
    """`template` rendered with `context()` once per `key`, language (and TTL), with this request's nonce,
    token and query string (the language switch's links keep it)."""
    html = pages.get(
        (template, translation.get_language(), *key), lambda: render_marked(request, template, context())
    )
    return fill_marks(request, html)
