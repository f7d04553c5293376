from django.contrib import admin, messages

from core.admin import ReadOnlyModelAdmin
from platform_api.context import RequestContext
from webhooks.models import (
    NotificationEmail,
    NotificationSettings,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from webhooks.services import webhook_deliveries_requeue_failed, webhook_endpoint_update


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "organization",
        "url",
        "is_active",
        "success_count",
        "failure_count",
        "consecutive_failures",
        "last_triggered_at",
    )
    list_filter = ("is_active", "organization")
    search_fields = ("id", "url", "organization__slug")
    list_select_related = ("organization",)
    fields = (
        "id",
        "organization",
        "url",
        "description",
        "events",
        "is_active",
        "disabled_reason",
        "success_count",
        "failure_count",
        "consecutive_failures",
        "last_triggered_at",
        "created_at",
        "updated_at",
    )
    # Every staff change goes through the services (actions below), which audit it and
    # reschedule what a pause held; the form itself changes nothing.
    readonly_fields = fields
    actions = ["enable", "disable"]

    def has_add_permission(self, request):
        return False  # endpoints are created through the API, which validates URLs and returns the secret

    def has_delete_permission(self, request, obj=None):
        return False  # deleting goes through the API, which audits it

    @admin.action(description="Enable selected endpoints (resets the failure streak, sends held deliveries)")
    def enable(self, request, queryset):
        count = self._set_active(request, queryset, active=True)
        self.message_user(request, f"Enabled {count} endpoint(s).", messages.SUCCESS)

    @admin.action(description="Disable selected endpoints")
    def disable(self, request, queryset):
        count = self._set_active(request, queryset, active=False)
        self.message_user(request, f"Disabled {count} endpoint(s).", messages.SUCCESS)

    def _set_active(self, request, queryset, *, active: bool) -> int:
        endpoints = list(queryset.filter(is_active=not active).select_related("organization"))
        for endpoint in endpoints:
            webhook_endpoint_update(
                ctx=RequestContext.for_staff(request, endpoint.organization),
                endpoint=endpoint,
                is_active=active,
                pause_reason="" if active else f"disabled by staff ({request.user})",
            )
        return len(endpoints)


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = ("number", "response_code", "response_time_ms", "error", "manual", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "endpoint",
        "event_type",
        "status",
        "attempts",
        "response_code",
        "next_attempt_at",
        "created_at",
    )
    list_filter = ("status", "event_type", "is_test", "created_at")
    search_fields = ("=id", "=endpoint__id", "endpoint__url")
    list_select_related = ("endpoint",)
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    inlines = [WebhookAttemptInline]
    actions = ["retry_failed"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Retry selected failed deliveries")
    def retry_failed(self, request, queryset):
        count = webhook_deliveries_requeue_failed(deliveries=queryset)
        self.message_user(
            request, f"Queued {count} failed delivery(ies) for another attempt.", messages.SUCCESS
        )


@admin.register(WebhookEvent)
class WebhookEventAdmin(admin.ModelAdmin):
    list_display = ("id", "event_type", "organization", "created_at")
    list_filter = ("event_type", "organization")
    search_fields = ("id",)
    readonly_fields = ("id", "organization", "event_type", "data", "created_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(NotificationEmail)
class NotificationEmailAdmin(admin.ModelAdmin):
    """Merchants' notification emails: what was sent, and what is still being retried."""

    list_display = ("id", "organization", "event_type", "status", "attempts", "next_attempt_at", "sent_at")
    list_filter = ("status", "event_type", "organization")
    search_fields = ("id", "organization__slug", "subject")
    list_select_related = ("organization",)
    readonly_fields = [field.name for field in NotificationEmail._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(NotificationSettings)
class NotificationSettingsAdmin(ReadOnlyModelAdmin):
    list_display = ("organization", "email_enabled", "email_address", "updated_at")
    list_filter = ("email_enabled",)
    search_fields = ("organization__slug", "email_address")
    list_select_related = ("organization",)
