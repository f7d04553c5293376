"""Health checks for a load balancer and a process supervisor, outside both interfaces; and the root page.

- `GET /healthz` (liveness): the process answers. Touches nothing: a database outage must not get every web
  process restarted.
- `GET /readyz` (readiness): the database answers one `SELECT 1` and, where the deployment has one, the shared
  Redis answers a PING (each within its short time-out); 503 otherwise, so the balancer sends payers to a node
  that can serve them. Workers and beat are checked from the command line (docs/operations.md).

Neither is cached, logged as an error or rate limited; both are plain HTTP (exempt from the HTTPS redirect).
"""

from __future__ import annotations

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from redis.exceptions import RedisError

from core.shared_redis import shared_redis
from orders.views import order_route_not_found


def _read_only(view):
    def probe(request: HttpRequest) -> JsonResponse:
        if request.method not in ("GET", "HEAD"):
            refused = JsonResponse({"status": "method not allowed"}, status=405)
            refused["Allow"] = "GET, HEAD"
            return refused
        return view(request)

    return csrf_exempt(never_cache(probe))  # a POST is a 405 in JSON, never the CSRF page


@_read_only
def live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@_read_only
def ready(request: HttpRequest) -> JsonResponse:
    checks = {"database": "ok"}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        checks["database"] = "unavailable"
    client = shared_redis()
    if client is not None:
        try:
            client.ping()
            checks["redis"] = "ok"
        except RedisError:
            checks["redis"] = "unavailable"
    ok = all(value == "ok" for value in checks.values())
    return JsonResponse(
        {"status": "ok" if ok else "unavailable", "checks": checks}, status=200 if ok else 503
    )


@never_cache
def home(request: HttpRequest) -> HttpResponse:
    """`GET /`: a small page that leads to the dashboard, the API docs and the admin (any other method on
    the root is the order interface's 405)."""
    if request.method not in ("GET", "HEAD"):
        return order_route_not_found(request, path="")
    return render(request, "service/home.html", {"devnets": settings.DEVELOPMENT})
