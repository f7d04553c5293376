"""The order interface's envelope: `{success, message, data, statusCode}`.

`OrderError` is the one exception that carries an error of this interface;
`order_exception_handler` turns it, DRF's exceptions, platform authentication
errors and anything unexpected into `{success: false, message, statusCode}`.
`OrderAPIView` is the base of every order-interface view.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from drf_spectacular.utils import inline_serializer
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core import errors as domain
from core.dbretry import connection_lost
from core.http import client_ip, ip_digest
from core.inputs import InputChecksMixin, InvalidInput, PayloadTooLarge
from orders.serializers.responses import envelope  # noqa: F401 - a response's schema in the envelope, for other apps
from platform_api import ratelimit
from platform_api.api import OptionalApiKeyAuthentication, authenticate_limiting_failures
from platform_api.errors import PlatformError, first_validation_error
from platform_api.models import ApiKey

logger = logging.getLogger(__name__)


class OrderError(Exception):
    def __init__(self, message: str, status: int = 400, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"success": False, "message": self.message, "statusCode": self.status}


def ok(data: Any, message: str = "OK", status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        {"success": True, "message": message, "data": data, "statusCode": status},
        status=status,
        headers=headers,
    )


def validation_message(exc: drf_exceptions.ValidationError) -> str:
    param, leaf = first_validation_error(exc.detail)
    if getattr(leaf, "code", None) == "required":
        return f"{param} is required."
    return f"{param}: {leaf}" if param else str(leaf)


# A domain error's status on this interface (the first class it is an instance of).
DOMAIN_STATUS: tuple[tuple[type[domain.DomainError], int], ...] = (
    (domain.NotFound, 404),
    (domain.Conflict, 409),
    (domain.Forbidden, 403),
    (domain.UpstreamError, 502),
    (domain.NotConfigured, 503),
    (domain.DomainError, 400),
)


def to_order_error(exc: BaseException) -> OrderError:
    if isinstance(exc, OrderError):
        return exc
    if isinstance(exc, domain.DomainError):
        status = next(status for kind, status in DOMAIN_STATUS if isinstance(exc, kind))
        return OrderError(f"{exc.field}: {exc.message}" if exc.field else exc.message, status)
    if isinstance(exc, PlatformError):  # an API key sent to the order interface was refused
        return OrderError(exc.message, exc.status, exc.headers)
    if isinstance(exc, drf_exceptions.ValidationError):
        return OrderError(validation_message(exc))
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if isinstance(exc, InvalidInput):
        return OrderError(f"{exc.param}: {exc.detail}" if exc.param else str(exc.detail))
    if isinstance(exc, drf_exceptions.ParseError):
        return OrderError(f"The request body is not valid JSON: {exc.detail}")
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return OrderError("Send the request body as JSON with Content-Type: application/json.")
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return OrderError(str(exc.detail), 405)
    if isinstance(exc, Http404 | drf_exceptions.NotFound):
        return OrderError("Not found.", 404)
    if isinstance(exc, drf_exceptions.APIException) and exc.status_code < 500:
        return OrderError(str(exc.detail), exc.status_code)
    logger.exception("Unexpected error in the order interface", exc_info=exc)
    return OrderError("An unexpected error occurred. It has been logged; retry with backoff.", 500)


def order_exception_handler(exc: BaseException, context: dict[str, Any]) -> Response:
    if connection_lost(exc):
        raise exc  # a read is run again on a new connection (core.dbretry); anything else answers 500 there
    error = to_order_error(exc)
    headers = dict(error.headers)
    view = context.get("view")
    if error.status == 405 and view is not None:
        headers["Allow"] = ", ".join(view.allowed_methods)
    return Response(error.body(), status=error.status, headers=headers)


def order_error_response(error: OrderError) -> JsonResponse:
    response = JsonResponse(error.body(), status=error.status, json_dumps_params={"separators": (",", ":")})
    for name, value in error.headers.items():
        response[name] = value
    return response


class OrderAPIView(InputChecksMixin, APIView):
    authentication_classes = [OptionalApiKeyAuthentication]
    permission_classes: list[type] = []

    def get_exception_handler(self):
        return order_exception_handler

    def perform_authentication(self, request):
        authenticate_limiting_failures(request)

    def check_throttles(self, request):
        if request.method != "POST":
            return
        limit = settings.ORDER_WRITE_RATE_LIMIT_PER_MINUTE
        result = ratelimit.hit(f"order-write:{ip_digest(client_ip(request))}", limit)
        if not result.allowed:
            raise OrderError(
                f"Rate limit of {limit} requests per minute exceeded. Retry after {result.retry_after} seconds.",
                429,
                {"Retry-After": str(result.retry_after), **result.headers()},
            )

    @property
    def api_key(self) -> ApiKey | None:
        return self.request.auth


# The schema of the interface's error body, for the OpenAPI docs of every app that answers on it.
ERROR = inline_serializer(
    name="OrderError",
    fields={
        "success": serializers.BooleanField(default=False),
        "message": serializers.CharField(),
        "statusCode": serializers.IntegerField(),
    },
)
