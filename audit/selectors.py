"""Reads of the audit log, always scoped to one organization."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from audit.models import AuditEvent
from platform_api.models import Organization


def audit_event_list(
    *,
    organization: Organization,
    event_type: str | None = None,
    resource_type: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
) -> QuerySet[AuditEvent]:
    events = AuditEvent.objects.filter(organization=organization)
    if event_type:
        events = events.filter(event_type=event_type)
    if resource_type:
        events = events.filter(resource_type=resource_type)
    if created_from:
        events = events.filter(created_at__gte=created_from)
    if created_to:
        events = events.filter(created_at__lte=created_to)
    return events
