"""The payer's language on the hosted page and the widgets.

`?lang=es` (the page's language switch) chooses it and is remembered in the language cookie; otherwise the
cookie, then the browser's Accept-Language, then English (Django's `get_language_from_request`). Only the
payer's pages choose a language: the APIs, the admin and the emails to merchants stay in English. A page
served from the page cache (checkout/page_cache.py) is cached per language.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.cache import patch_vary_headers


def payer_language(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        known = dict(settings.LANGUAGES)
        asked = request.GET.get("lang", "")
        code = asked if asked in known else translation.get_language_from_request(request)
        if code not in known:
            code = settings.LANGUAGE_CODE
        with translation.override(code):
            request.LANGUAGE_CODE = code
            response = view(request, *args, **kwargs)
        if asked == code and request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME) != code:
            response.set_cookie(
                settings.LANGUAGE_COOKIE_NAME,
                code,
                max_age=settings.LANGUAGE_COOKIE_AGE,
                samesite=settings.LANGUAGE_COOKIE_SAMESITE,
                secure=settings.LANGUAGE_COOKIE_SECURE,
                httponly=True,
            )
        response.headers.setdefault("Content-Language", code)
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
        return response

    return wrapped


# What the switch keeps of a page's own query: the session page's token change and the swap widget's amount.
# A link page sets `request.payer_query` to the parameters it accepted (payer_query_of), so that a value it
# ignored (a success_url on someone else's host, say) is not written back into the page.
KEPT = ("change", "amount")


def payer_query_of(params: dict) -> list[tuple[str, str]]:
    """A link page's accepted URL parameters as query pairs (`metadata` as `metadata[key]=value`)."""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        if key == "metadata":
            pairs += [(f"metadata[{name}]", str(item)) for name, item in value.items()]
        elif value not in (None, ""):
            pairs.append((key, str(value)))
    return pairs


def query_without_language(request: HttpRequest) -> str:
    """The query string the language switch's links keep (without `lang`), ending in `&` when not empty."""
    pairs = getattr(request, "payer_query", None)
    if pairs is None:
        pairs = [(key, value) for key, values in request.GET.lists() if key in KEPT for value in values]
    return urlencode(pairs) + "&" if pairs else ""


def languages(request: HttpRequest) -> dict:
    """Context processor: the languages the switch offers and the query its links keep."""
    current = translation.get_language()
    return {
        "languages": [
            {"code": code, "name": name, "current": code == current} for code, name in settings.LANGUAGES
        ],
        "lang_query": query_without_language(request),
    }
