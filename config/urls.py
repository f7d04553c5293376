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
    # Everything else outside the admin, static files and the docs is an unknown
    # order-interface path, answered in its envelope.
    re_path(r"^(?!admin|static/|api/)(?P<path>.*)$", order_route_not_found),
]
