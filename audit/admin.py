from django.contrib import admin

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "organization",
        "event_type",
        "resource_id",
        "request_method",
        "status_code",
        "ip_address",
    )
    list_filter = ("event_type", "resource_type", "organization", "created_at")
    search_fields = ("id", "resource_id", "request_path")
    date_hierarchy = "created_at"
    list_select_related = ("organization",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
