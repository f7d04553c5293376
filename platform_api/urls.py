from django.urls import path, re_path

from audit.views import AuditEventListView
from core.inputs import register_converters
from platform_api import views
from webhooks import views as webhook_views

register_converters()

urlpatterns = [
    path("api-keys", views.ApiKeyCollectionView.as_view(), name="api-keys"),
    path("api-keys/<public_id:key_id>", views.ApiKeyDetailView.as_view(), name="api-key-detail"),
    path("quick-pay", views.QuickPayView.as_view(), name="quick-pay"),
    path("events", AuditEventListView.as_view(), name="events"),
    path("webhooks", webhook_views.WebhookCollectionView.as_view(), name="webhooks"),
    path("webhooks/<public_id:webhook_id>", webhook_views.WebhookDetailView.as_view(), name="webhook"),
    path(
        "webhooks/<public_id:webhook_id>/test", webhook_views.WebhookTestView.as_view(), name="webhook-test"
    ),
    path(
        "webhooks/<public_id:webhook_id>/rotate-secret",
        webhook_views.WebhookRotateSecretView.as_view(),
        name="webhook-rotate-secret",
    ),
    path(
        "webhooks/<public_id:webhook_id>/deliveries",
        webhook_views.WebhookDeliveriesView.as_view(),
        name="webhook-deliveries",
    ),
    path(
        "webhooks/<public_id:webhook_id>/deliveries/<public_id:delivery_id>/retry",
        webhook_views.WebhookDeliveryRetryView.as_view(),
        name="webhook-delivery-retry",
    ),
    # Must stay last: everything else under /api/v1 is a 404 in the platform envelope.
    re_path(r"^(?P<path>[\s\S]*)$", views.platform_route_not_found),  # [\s\S]: a newline too
]
