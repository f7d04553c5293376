from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularSwaggerSplitView

from config import health
from core.schema_view import SchemaView
from observability.views import metrics_view
from orders.views import order_route_not_found
from platform_api.views import platform_route_not_found

# The platform interface: each app mounts its own resources under /api/v1/.
platform = [
    path("", include("platform_api.urls")),
    path("", include("merchant.urls")),
    path("", include("quickpay.urls")),
    path("", include("audit.urls")),
    path("", include("webhooks.urls")),
    path("", include("checkout.api_urls")),
    path("", include("refunds.urls")),
    path("", include("ledger.urls")),
    # Must stay last: everything else under /api/v1 is a 404 in the platform envelope.
    re_path(r"^(?P<path>[\s\S]*)$", platform_route_not_found),  # [\s\S]: a newline too
]

urlpatterns = [
    path("", health.home, name="home"),
    path("healthz", health.live, name="healthz"),
    path("readyz", health.ready, name="readyz"),
    path("metrics", metrics_view, name="metrics"),  # Prometheus, from METRICS_ALLOWED_NETWORKS only
    path("admin/", admin.site.urls),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    # Swagger UI's start-up script is served as a file of its own (the split view), so no inline script runs.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
    path("api/v1/", include(platform)),
    path("x402/", include("facilitator.urls")),  # the x402 facilitator, in the protocol's own shapes
    path("", include("orders.urls")),
    path("", include("checkout.interface_urls")),
    path("", include("checkout.urls")),
    path("", include("onramp.urls")),
    path("dashboard/", include("dashboard.urls")),
    # Everything else outside the admin (which has its own) is an unknown path of the root
    # interface, answered in its envelope, with DEBUG on or off: /api/, /static/nope, /x.
    re_path(r"^(?!admin/|dashboard/)(?P<path>[\s\S]*)$", order_route_not_found),  # [\s\S]: a newline too
]

# What fails outside a view (a Host header not allowed, an uncaught exception) in the interface's envelope.
handler400 = "config.error_handlers.bad_request"
handler500 = "config.error_handlers.server_error"
