from django.contrib import admin

from audit.models import AuditEvent
from core.admin import ReadOnlyModelAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
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
