"""The platform interface's error envelope: `{error: {type, code, message, param?}}`.

`PlatformError` is the one exception type that carries an error; the handler
turns it, DRF's own exceptions and anything unexpected into the envelope.
Nothing else builds error bodies.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from core import errors as domain
from core.dbretry import connection_lost
from core.inputs import InvalidInput, PayloadTooLarge

logger = logging.getLogger(__name__)

INVALID_REQUEST = "invalid_request_error"


class PlatformError(Exception):
    """An error answered in the platform envelope."""

    def __init__(
        self,
        *,
        status: int,
        type: str,
        code: str,
        message: str,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.code = code
        self.message = message
        self.param = param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"type": self.type, "code": self.code, "message": self.message}
        if self.param is not None:
            error["param"] = self.param
        return {"error": error}

    # Constructors for the contract's codes, so call sites read as the contract does.

    @classmethod
    def missing_field(cls, param: str, message: str | None = None) -> PlatformError:
        return cls(
            status=400,
            type=INVALID_REQUEST,
            code="missing_required_field",
            message=message or f"The field '{param}' is required.",
            param=param,
        )

    @classmethod
    def invalid_field(cls, param: str | None, message: str) -> PlatformError:
        return cls(status=400, type=INVALID_REQUEST, code="invalid_field_value", message=message, param=param)

    @classmethod
    def invalid_address(cls, param: str) -> PlatformError:
        return cls(
            status=400,
            type=INVALID_REQUEST,
            code="invalid_address",
            message=f"'{param}' must be an address: 0x followed by 40 hexadecimal characters.",
            param=param,
        )

    @classmethod
    def not_found(cls, resource_type: str, resource_id: str) -> PlatformError:
        return cls(
            status=404,
            type="not_found_error",
            code="resource_not_found",
            message=f"No {resource_type} with id '{resource_id}'.",
        )

    @classmethod
    def invalid_transition(cls, message: str) -> PlatformError:
        return cls(status=400, type=INVALID_REQUEST, code="invalid_status_transition", message=message)

    @classmethod
    def duplicate(cls, param: str, message: str) -> PlatformError:
        return cls(status=409, type=INVALID_REQUEST, code="duplicate_resource", message=message, param=param)

    @classmethod
    def no_updates(cls) -> PlatformError:
        return cls(
            status=400,
            type=INVALID_REQUEST,
            code="no_updates_provided",
            message="The request contains no fields that can be updated.",
        )

    @classmethod
    def authentication(cls, code: str, message: str) -> PlatformError:
        return cls(status=401, type="authentication_error", code=code, message=message)

    @classmethod
    def insufficient_permissions(cls, required: str) -> PlatformError:
        return cls(
            status=403,
            type="permission_error",
            code="insufficient_permissions",
            message=f"This API key lacks the '{required}' permission that this request requires.",
        )

    @classmethod
    def rate_limited(cls, retry_after: int, limit: int, what: str = "requests") -> PlatformError:
        return cls(
            status=429,
            type="rate_limit_error",
            code="rate_limit_exceeded",
            message=f"Rate limit of {limit} {what} per minute exceeded. Retry after {retry_after} seconds.",
            headers={"Retry-After": str(retry_after)},
        )

    @classmethod
    def idempotency_conflict(cls, message: str) -> PlatformError:
        return cls(status=409, type="idempotency_error", code="idempotency_conflict", message=message)

    @classmethod
    def internal(cls) -> PlatformError:
        return cls(
            status=500,
            type="api_error",
            code="internal_error",
            message="An unexpected error occurred. It has been logged; retry with backoff.",
        )


def first_validation_error(detail: Any, path: str = "") -> tuple[str, Any]:
    """Walk DRF's nested error detail to the first leaf, returning its dotted param path."""
    if isinstance(detail, dict):
        field, value = next(iter(detail.items()))
        if field == "non_field_errors":
            return first_validation_error(value, path)
        if isinstance(field, int):  # ListField/DictField report items by index
            return first_validation_error(value, f"{path}[{field}]")
        return first_validation_error(value, f"{path}.{field}" if path else str(field))
    if isinstance(detail, list):
        for index, item in enumerate(detail):
            if item:  # many=True serializers report {} for items without errors
                if isinstance(item, dict) and path:
                    return first_validation_error(item, f"{path}[{index}]")
                return first_validation_error(item, path)
    return path, detail


def error_from_validation(exc: drf_exceptions.ValidationError) -> PlatformError:
    param, leaf = first_validation_error(exc.detail)
    code = getattr(leaf, "code", "invalid")
    message = str(leaf)
    param_or_none = param or None
    if code == "required":
        return PlatformError.missing_field(param, f"The field '{param}' is required.")
    if code == "invalid_address":
        return PlatformError.invalid_address(param)
    if code == "parameter_unknown":  # Stripe's: a misspelt field is an error, never silently ignored
        return PlatformError(
            status=400, type=INVALID_REQUEST, code="parameter_unknown", message=message, param=param_or_none
        )
    if param_or_none and not message.startswith(f"'{param}'"):
        message = f"'{param}': {message}"
    return PlatformError.invalid_field(param_or_none, message)


def from_domain_error(exc: domain.DomainError) -> PlatformError:
    """A service's refusal in the platform's terms, by its domain code; a provider failure is a 503 the
    client may retry."""
    code = domain.ErrorCode
    if exc.code == code.NOT_FOUND:
        # `param` when the missing resource is named by a field of the request (an endpoint to resend to).
        return PlatformError(
            status=404,
            type="not_found_error",
            code="resource_not_found",
            message=exc.message,
            param=exc.field,
        )
    if exc.code == code.UNIQUE:
        return PlatformError(
            status=409, type=INVALID_REQUEST, code="duplicate_resource", message=exc.message, param=exc.field
        )
    if exc.code == code.INVALID_STATE:
        return PlatformError.invalid_transition(exc.message)
    if exc.code in (code.UPSTREAM, code.NOT_CONFIGURED):
        return PlatformError(status=503, type="api_error", code="internal_error", message=exc.message)
    if exc.code == code.NOTHING_TO_UPDATE:
        return PlatformError.no_updates()
    if exc.code == code.FORBIDDEN:
        return PlatformError(
            status=403, type="permission_error", code="insufficient_permissions", message=exc.message
        )
    if exc.code == code.REQUIRED and exc.field:
        return PlatformError.missing_field(exc.field, exc.message)
    message = exc.message
    if exc.field and not message.startswith(f"'{exc.field}'"):
        message = f"'{exc.field}': {message}"
    return PlatformError.invalid_field(exc.field, message)


def to_platform_error(exc: BaseException) -> PlatformError:
    """Map any exception raised while serving a platform request to a PlatformError."""
    if isinstance(exc, PlatformError):
        return exc
    if isinstance(exc, drf_exceptions.ValidationError):
        return error_from_validation(exc)
    if isinstance(exc, domain.DomainError):
        return from_domain_error(exc)
    if isinstance(exc, InvalidInput):
        return PlatformError.invalid_field(exc.param, str(exc.detail))
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if isinstance(exc, PayloadTooLarge):
        return PlatformError(
            status=413, type=INVALID_REQUEST, code="request_too_large", message=str(exc.detail)
        )
    if isinstance(exc, drf_exceptions.ParseError):
        return PlatformError.invalid_field(None, f"The request body is not valid JSON: {exc.detail}")
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return PlatformError.invalid_field(
            None, "Send the request body as JSON with Content-Type: application/json."
        )
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return PlatformError(
            status=405, type=INVALID_REQUEST, code="method_not_allowed", message=str(exc.detail)
        )
    if isinstance(exc, Http404 | drf_exceptions.NotFound):
        return PlatformError(
            status=404, type="not_found_error", code="resource_not_found", message="Not found."
        )
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        return PlatformError.authentication("key_missing", "No API key: send Authorization: Bearer <key>.")
    if isinstance(exc, drf_exceptions.PermissionDenied | DjangoPermissionDenied):
        return PlatformError(
            status=403, type="permission_error", code="insufficient_permissions", message="Permission denied."
        )
    if isinstance(exc, drf_exceptions.APIException) and exc.status_code < 500:
        return PlatformError.invalid_field(None, str(exc.detail))
    logger.exception("Unexpected error in the platform interface", exc_info=exc)
    return PlatformError.internal()


def platform_exception_handler(exc: BaseException, context: dict[str, Any]) -> Response:
    """DRF EXCEPTION_HANDLER for platform views: every error becomes the envelope."""
    if connection_lost(exc):
        raise exc  # a read is run again on a new connection (core.dbretry); anything else answers 500 there
    error = to_platform_error(exc)
    headers = dict(error.headers)
    if error.status == 405 and isinstance(exc, drf_exceptions.MethodNotAllowed):
        view = context.get("view")
        if view is not None:
            headers["Allow"] = ", ".join(view.allowed_methods)
    return Response(error.body(), status=error.status, headers=headers)


def platform_error_response(error: PlatformError) -> JsonResponse:
    """The envelope as a plain Django response, for code outside DRF views."""
    response = JsonResponse(error.body(), status=error.status, json_dumps_params={"separators": (",", ":")})
    for name, value in error.headers.items():
        response[name] = value
    return response
