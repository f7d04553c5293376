"""First in the middleware stack: each request's id, and its count and duration by route name."""

from __future__ import annotations

import time

from django.core.signals import request_finished
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

from observability import context, metrics

HEADER = "X-Request-ID"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_of(request: HttpRequest) -> str:
    """The matched route's name (namespace and name, or the view's dotted path), never the path: a label
    may not carry ids. A request no route matched is `unmatched`."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return (match.view_name or match._func_path)[:100]


class RequestObservation:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        rid = context.accepted_request_id(request.headers.get(HEADER))
        request.request_id = rid  # type: ignore[attr-defined]
        context.clear()
        context.request_id.set(rid)  # cleared when the response is closed (after Django logs an error)
        response = self.get_response(request)
        response[HEADER] = rid
        method = request.method if request.method in METHODS else "OTHER"
        route = route_of(request)
        metrics.http_requests.labels(route, method, str(response.status_code)).inc()
        metrics.http_duration.labels(route, method).observe(time.perf_counter() - started)
        return response


@receiver(request_finished, dispatch_uid="observability.clear")
def _clear(**_) -> None:
    """The thread answers other requests next: nothing of this one stays in its context."""
    context.clear()
