"""The payer pages' HTML that is the same for every payer, rendered once per process.

The hosted link page and the widget pages are what a flash sale's payers open by the thousand; what they
show changes only when the merchant edits the link or widget. A page is cached under its template and a
key that includes the record's `updated_at` (read fresh on every request, so an edit shows on the next
view on every node), for TTL seconds at most, so that a token's or a chain's change reaches it too. The
parts that differ per request, the CSP nonce and the CSRF token, are rendered as marks and replaced in
the cached text.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.html import escape

from checkout.languages import languages as languages_context
from checkout.languages import query_without_language

TTL = 30.0
SIZE = 512
_NONCE = "nonce" + secrets.token_hex(12)
_CSRF = "csrf" + secrets.token_hex(12)
_QUERY = "query" + secrets.token_hex(12)


class _Pages:
    def __init__(self) -> None:
        self._pages: OrderedDict[tuple, tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, render: Callable[[], str]) -> str:
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


pages = _Pages()


def cached_page(
    request: HttpRequest, template: str, key: tuple, context: Callable[[], dict[str, Any]]
) -> str:
    """`template` rendered with `context()` once per `key`, language (and TTL), with this request's nonce,
    token and query string (the language switch's links keep it)."""

    def render() -> str:
        marks = {"request": {"csp_nonce": _NONCE}, "csrf_token": _CSRF}
        return render_to_string(
            template, context() | languages_context(request) | {"lang_query": _QUERY} | marks
        )

    html = pages.get((template, translation.get_language(), *key), render).replace(
        _NONCE, str(request.csp_nonce)
    )
    html = html.replace(_QUERY, escape(query_without_language(request))) if _QUERY in html else html
    return html.replace(_CSRF, get_token(request)) if _CSRF in html else html
