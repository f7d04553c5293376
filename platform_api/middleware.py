"""Errors that escape views under /api/v1 still answer in the platform envelope, without a traceback."""

from __future__ import annotations

import logging

from platform_api.errors import PlatformError, platform_error_response

logger = logging.getLogger(__name__)

PLATFORM_PREFIX = "/api/v1/"


class PlatformErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not request.path.startswith(PLATFORM_PREFIX):
            return None
        logger.exception("Unhandled error on %s %s", request.method, request.path, exc_info=exception)
        return platform_error_response(PlatformError.internal())
