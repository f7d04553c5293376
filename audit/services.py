"""Writes to the audit log: recording events and the 90-day retention purge."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from platform_api.context import RequestContext


def audit_event_record(
    *, ctx: RequestContext, event_type: str, resource_type: str, resource_id: str, created: bool = False
) -> AuditEvent:
    """Record one platform create, update or delete; call it inside the write's transaction.

    Services say what they did, not how a request answered: the row's `status_code` (a field of the
    contract's audit event) is what the platform answers such a write, 201 when it made a new resource
    (`created`), else 200."""
    if ctx.organization is None:
        raise ValueError("audit events belong to an organization")
    return AuditEvent.objects.create(
        organization=ctx.organization,
        event_type=event_type,
        resource_type=resource_type,
        resource_id=resource_id,
        ip_address=ctx.ip_address or None,
        request_method=ctx.method,
        request_path=ctx.path[:500],
        status_code=201 if created else 200,
        actor=ctx.actor[:200],
    )


def audit_events_purge(*, now=None, batch_size: int | None = None) -> int:
    """Delete events older than the retention period in batches (short transactions, short locks)."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.AUDIT_RETENTION_DAYS)
    batch_size = batch_size or settings.AUDIT_PURGE_BATCH_SIZE
    total = 0
    while True:
        with transaction.atomic():
            ids = list(
                AuditEvent.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                return total
            deleted, _ = AuditEvent.objects.filter(pk__in=ids).delete()
        total += deleted
