"""How other apps learn of platform writes without the platform importing them.

`record_write` is called inside the write's transaction by every service that
creates, updates or deletes a platform resource. The audit app receives it
and records the event in that same transaction; a receiver that fails rolls
the write back, so a write is never left without its audit record.
"""

from __future__ import annotations

from django.dispatch import Signal

from platform_api.audit_names import AuditName
from platform_api.context import RequestContext

# kwargs: ctx (RequestContext), event_type, resource_type, resource_id, created (the write made a new resource)
resource_written = Signal()


def record_write(
    *, ctx: RequestContext, event_type: AuditName, resource_type: str, resource_id: str, created: bool = False
) -> None:
    """`event_type` is an `AuditName`; another string raises ValueError here, inside the write's transaction,
    so the write it would have recorded is rolled back rather than logged under a name nothing filters by."""
    resource_written.send(
        sender=RequestContext,
        ctx=ctx,
        event_type=AuditName(event_type).value,
        resource_type=resource_type,
        resource_id=resource_id,
        created=created,
    )


# kwargs: organization, session_ids. Sent in the transaction that erases a customer's personal data, so that
# the apps above the platform erase what they keep of it too (webhooks: events, deliveries, emails).
personal_data_erased = Signal()
