"""What the audit log hears: every platform write a service records (platform_api.signals.resource_written)."""

from __future__ import annotations

from django.dispatch import receiver

from audit.services import audit_event_record
from platform_api.signals import resource_written


@receiver(resource_written, dispatch_uid="audit.record")
def record(sender, *, ctx, event_type, resource_type, resource_id, created, **_) -> None:
    audit_event_record(
        ctx=ctx, event_type=event_type, resource_type=resource_type, resource_id=resource_id, created=created
    )
