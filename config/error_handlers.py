"""Django's own error answers (handler400, handler500) in the envelope of the interface the path belongs to.

Views answer their errors themselves; these are for what fails before or around a view: a Host header
outside ALLOWED_HOSTS, a malformed request Django refuses, an exception no middleware caught. The HTML
pages (the admin, the hosted checkout, widgets) keep Django's HTML answers.
"""

from __future__ import annotations

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.views import defaults

from orders.envelope import OrderError, order_error_response
from platform_api.errors import PlatformError, platform_error_response
from platform_api.middleware import PLATFORM_PREFIX

PAGES = ("/admin/", "/pay/", "/widgets/")


def _is_page(request: HttpRequest) -> bool:
    return request.path.startswith(PAGES)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_page(request):
        return defaults.bad_request(request, exception)
    message = (
        "The Host header names no host this service answers for."  # never echo the header's value
        if isinstance(exception, DisallowedHost)
        else "The request could not be read."
    )
    if request.path.startswith(PLATFORM_PREFIX):
        return platform_error_response(PlatformError.invalid_field(None, message))
    return order_error_response(OrderError(message))


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_page(request):
        return defaults.server_error(request)
    if request.path.startswith(PLATFORM_PREFIX):
        return platform_error_response(PlatformError.internal())
    return order_error_response(OrderError("An unexpected error occurred. It has been logged.", 500))
