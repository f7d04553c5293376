"""Hostile input, refused once at the edge: the JSON parser, path converters and query parsing.

Each kind of input has one mechanism, shared by both interfaces; each raises
`InvalidInput` (400, naming the field) or `PayloadTooLarge` (413), which each
interface's exception handler renders in its own envelope. Nothing here
reaches the database, so no driver error (NUL bytes, lone surrogates, integer
overflow) and no RecursionError can turn bad input into a 500.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, parsers

MAX_JSON_DEPTH = 32
# NUL is refused by PostgreSQL in text; lone surrogates cannot be encoded as UTF-8 at all.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
_UNSTORABLE_QUERY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


class InvalidInput(exceptions.ParseError):
    """A request that cannot be taken as sent; `param` names the field, when there is one."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "request_too_large"

    def __init__(self) -> None:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        super().__init__(f"The request body is larger than the limit of {limit} bytes.")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _UNSTORABLE.search(key):  # name the key without echoing what cannot be encoded
        key = json.dumps(key)[1:-1]
    return f"{path}.{key}" if path else key


def check_json_value(value: Any) -> None:
    """Refuse nesting deeper than MAX_JSON_DEPTH and strings (keys too) that cannot be stored; no recursion."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise InvalidInput(f"JSON is nested more than {MAX_JSON_DEPTH} levels deep.", path or None)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                child_path = _join(path, key)
                if isinstance(key, str) and _UNSTORABLE.search(key):
                    raise InvalidInput("Keys must not contain NUL characters or lone surrogates.", child_path)
                stack.append((child, child_path, depth + 1))
        elif isinstance(node, str) and _UNSTORABLE.search(node):
            raise InvalidInput("Text must not contain NUL characters or lone surrogates.", path or None)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


class StrictJSONParser(parsers.JSONParser):
    """JSON bodies up to DATA_UPLOAD_MAX_MEMORY_SIZE, strict UTF-8, no NaN/Infinity, bounded depth."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        request = (parser_context or {}).get("request")
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
        except ValueError:
            declared = 0
        if limit is not None and declared > limit:
            raise PayloadTooLarge()
        try:
            raw = stream.read(limit + 1) if limit is not None else stream.read()
        except RequestDataTooBig:
            raise PayloadTooLarge() from None
        if limit is not None and len(raw) > limit:
            raise PayloadTooLarge()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("The request body is not valid UTF-8.") from None
        try:
            value = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise InvalidInput(f"JSON is nested more than {MAX_JSON_DEPTH} levels deep.") from None
        except ValueError as exc:
            raise InvalidInput(f"The request body is not valid JSON: {exc}") from None
        check_json_value(value)
        return value


def check_body_size(request) -> None:
    """413 before anything reads a body over DATA_UPLOAD_MAX_MEMORY_SIZE (as declared by Content-Length)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise InvalidInput("Content-Length must be a number.") from None
    if limit is not None and declared > limit:
        raise PayloadTooLarge()


def check_query(query) -> None:
    """Query parameters: no NUL or other control characters in names or values (one check for all views)."""
    for name, values in query.lists():
        if _UNSTORABLE_QUERY.search(name):
            raise InvalidInput("Query parameter names must not contain control characters.")
        for value in values:
            if _UNSTORABLE_QUERY.search(value):
                raise InvalidInput(f"'{name}' must not contain control characters.", name)


class BoundedIntConverter:
    """A path segment of 1 to 18 ASCII digits (so it fits a 64-bit column); anything else is no match (404)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


class PublicIdConverter:
    """A path id such as `wh_...` or `del_...`: letters, digits, `_` and `-`; anything else is no match (404)."""

    regex = "[A-Za-z0-9_-]{1,64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class InputChecksMixin:
    """For an interface's base view: body size before anything reads it, the query after authentication."""

    def initial(self, request, *args, **kwargs):
        check_body_size(request)
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        check_query(request.query_params)


def register_converters() -> None:
    """Register `<int64:...>` and `<public_id:...>` once, from whichever URL module loads first."""
    from django.urls.converters import get_converters, register_converter

    registered = get_converters()
    for name, converter in (("int64", BoundedIntConverter), ("public_id", PublicIdConverter)):
        if name not in registered:
            register_converter(converter, name)
