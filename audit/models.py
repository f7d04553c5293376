"""The audit log of platform API actions, kept for 90 days."""

from django.db import models
from django.utils import timezone

from core.ids import public_id


def new_audit_event_id() -> str:
    return public_id("evt")


class AuditEvent(models.Model):
    """One create, update or delete made through the platform interface."""

    id = models.CharField(primary_key=True, max_length=32, default=new_audit_event_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="audit_events"
    )
    event_type = models.CharField(max_length=64)
    resource_type = models.CharField(max_length=32)
    resource_id = models.CharField(max_length=64)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    request_method = models.CharField(max_length=10)
    request_path = models.CharField(max_length=500)
    status_code = models.PositiveSmallIntegerField()
    actor = models.CharField(
        max_length=200,
        blank=True,
        help_text="api_key:ak_..., member:mem_... (dashboard) or staff:<username> (admin).",
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="audit_org_created"),
            models.Index(fields=["organization", "event_type", "-created_at"], name="audit_org_type_created"),
            models.Index(
                fields=["organization", "resource_type", "-created_at"], name="audit_org_restype_created"
            ),
            models.Index(fields=["created_at"], name="audit_created"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.resource_id}"
