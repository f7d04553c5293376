"""Errors that escape views of the order interface still answer in its envelope, without a traceback."""

from __future__ import annotations

import logging

from django.http import Http404

from orders.envelope import OrderError, order_error_response

logger = logging.getLogger(__name__)

NOT_ORDER_INTERFACE = ("/api/", "/admin", "/static/")


class OrderErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if request.path.startswith(NOT_ORDER_INTERFACE):
            return None
        if isinstance(exception, Http404):  # a page or poll for something that is not there: not an error
            return order_error_response(OrderError(str(exception) or "Not found.", 404))
        logger.exception("Unhandled error on %s %s", request.method, request.path, exc_info=exception)
        return order_error_response(
            OrderError("An unexpected error occurred. It has been logged; retry with backoff.", 500)
        )
