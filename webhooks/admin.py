from django.contrib import admin

from webhooks.models import WebhookEvent


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
