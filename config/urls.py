from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from orders.views import order_route_not_found

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    path("api/v1/", include("platform_api.urls")),
    path("", include("orders.urls")),
    path("", include("onramp.urls")),
    # Everything else outside the admin (which has its own) is an unknown path of the root
    # interface, answered in its envelope, with DEBUG on or off: /api/, /static/nope, /x.
    re_path(r"^(?!admin/)(?P<path>[\s\S]*)$", order_route_not_found),  # [\s\S]: a newline too
]
