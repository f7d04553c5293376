from django.urls import path

from core.inputs import register_converters
from webhooks import event_views, notification_views, views

register_converters()

urlpatterns = [
    path("notifications", notification_views.NotificationSettingsView.as_view(), name="notifications"),
    path(
        "notifications/test/email",
        notification_views.NotificationTestEmailView.as_view(),
        name="notification-test",
    ),
    path("webhook-events", event_views.WebhookEventCollectionView.as_view(), name="webhook-events"),
    path("webhook-events/listen", event_views.WebhookEventListenView.as_view(), name="webhook-events-listen"),
    path(
        "webhook-events/<public_id:event_id>",
        event_views.WebhookEventDetailView.as_view(),
        name="webhook-event",
    ),
    path(
        "webhook-events/<public_id:event_id>/resend",
        event_views.WebhookEventResendView.as_view(),
        name="webhook-event-resend",
    ),
    path("webhooks", views.WebhookCollectionView.as_view(), name="webhooks"),
    path("webhooks/<public_id:webhook_id>", views.WebhookDetailView.as_view(), name="webhook"),
    path("webhooks/<public_id:webhook_id>/test", views.WebhookTestView.as_view(), name="webhook-test"),
    path(
        "webhooks/<public_id:webhook_id>/rotate-secret",
        views.WebhookRotateSecretView.as_view(),
        name="webhook-rotate-secret",
    ),
    path(
        "webhooks/<public_id:webhook_id>/deliveries",
        views.WebhookDeliveriesView.as_view(),
        name="webhook-deliveries",
    ),
    path(
        "webhooks/<public_id:webhook_id>/deliveries/<public_id:delivery_id>/retry",
        views.WebhookDeliveryRetryView.as_view(),
        name="webhook-delivery-retry",
    ),
]
