"""What the onramp app keeps: the vendorB webhook events already handled, so a replay changes nothing."""

from django.db import models
from django.utils import timezone


class VendorBEvent(models.Model):
    event_id = models.CharField(max_length=255, unique=True)
    type = models.CharField(max_length=100)
    payment_intent_id = models.CharField(max_length=255, blank=True)
    received_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.type} {self.event_id}"
