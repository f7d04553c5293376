"""Webhook events: what happened to an organization's payments, recorded for delivery."""

from django.db import models
from django.utils import timezone

from platform_api.ids import public_id


def new_webhook_event_id() -> str:
    return public_id("wevt")


class WebhookEvent(models.Model):
    """An event (`checkout.expired`, `payment.completed`, ...) for one organization's endpoints."""

    id = models.CharField(primary_key=True, max_length=32, default=new_webhook_event_id, editable=False)
    organization = models.ForeignKey(
        "platform_api.Organization", on_delete=models.CASCADE, related_name="webhook_events"
    )
    event_type = models.CharField(max_length=64)
    data = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="whevent_org_created")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.id}"
