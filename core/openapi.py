"""OpenAPI parameters that state the rules the server applies, so clients (and schemathesis) can follow them."""

from __future__ import annotations

import inspect
from typing import Any

from drf_spectacular import openapi
from drf_spectacular.utils import OpenApiParameter

# What `core.inputs.check_query` accepts in any free-text query value: no control characters.
PRINTABLE = r"^[^\u0000-\u001f\u007f]*$"
UUID = {"type": "string", "format": "uuid"}
PUBLIC_ID = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}


def integer(
    name: str, *, minimum: int, maximum: int, description: str = "", **kwargs: Any
) -> OpenApiParameter:
    return OpenApiParameter(
        name, {"type": "integer", "minimum": minimum, "maximum": maximum}, description=description, **kwargs
    )


def text(name: str, *, max_length: int = 200, description: str = "", **kwargs: Any) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        {"type": "string", "maxLength": max_length, "pattern": PRINTABLE},
        description=description,
        **kwargs,
    )


def path(name: str, schema: dict[str, Any], description: str = "") -> OpenApiParameter:
    return OpenApiParameter(name, schema, OpenApiParameter.PATH, description=description)


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's, except that an operation is described only by its own view's or method's docstring.

    `inspect.getdoc` falls back to a base class's docstring, so every view
    without one was described by its base view's note for maintainers.
    """

    def get_description(self) -> str:
        method = getattr(self.view, getattr(self.view, "action", self.method.lower()), None)
        own = inspect.cleandoc(self.view.__class__.__dict__.get("__doc__") or "")
        return (inspect.cleandoc(method.__doc__) if method is not None and method.__doc__ else "") or own
