from celery import shared_task

from audit.services import audit_events_purge


@shared_task
def purge_expired_audit_events() -> int:
    return audit_events_purge()
