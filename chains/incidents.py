"""Incidents: what the money path will not decide alone, recorded for staff (the admin's "Incidents").

A deposit that a reorg took back after it was counted, a sweep that moved less
than was counted, a transfer of a token the service does not list, one of the
service's own transactions that left the chain. Each is recorded once per
(kind, subject) and logged at ERROR; an open incident about an order
(`order:<id>`) holds its settlement until staff resolve it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from chains.models import Incident

logger = logging.getLogger(__name__)


def incident_record(
    *,
    kind: str,
    subject: str,
    summary: str,
    chain_id: int | None = None,
    details: dict[str, Any] | None = None,
) -> Incident:
    """The open or resolved incident of this kind about `subject`, recorded now if there is none."""
    existing = Incident.objects.filter(kind=kind, subject=subject).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            incident = Incident.objects.create(
                kind=kind, subject=subject, summary=summary[:500], chain_id=chain_id, details=details or {}
            )
    except IntegrityError:  # recorded by another process meanwhile
        return Incident.objects.get(kind=kind, subject=subject)
    logger.error("Incident %s (%s): %s", incident.pk, incident.get_kind_display(), summary)
    return incident


def incident_open_for(subject: str) -> bool:
    """Whether an unresolved incident is about `subject` (an order's settlement waits for staff then)."""
    return Incident.objects.filter(subject=subject, resolved_at__isnull=True).exists()


def incidents_resolve(*, incident_ids: list[int], actor: str) -> int:
    """Staff looked and acted: the incidents no longer hold anything; how many were open."""
    return Incident.objects.filter(pk__in=incident_ids, resolved_at__isnull=True).update(
        resolved_at=timezone.now(), resolved_by=actor[:150]
    )
