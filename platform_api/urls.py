from django.urls import path, re_path

from audit.views import AuditEventListView
from platform_api import views

urlpatterns = [
    path("api-keys", views.ApiKeyCollectionView.as_view(), name="api-keys"),
    path("api-keys/<str:key_id>", views.ApiKeyDetailView.as_view(), name="api-key-detail"),
    path("quick-pay", views.QuickPayView.as_view(), name="quick-pay"),
    path("events", AuditEventListView.as_view(), name="events"),
    # Must stay last: everything else under /api/v1 is a 404 in the platform envelope.
    re_path(r"^(?P<path>.*)$", views.platform_route_not_found),
]
