from celery import shared_task

from checkout import sessions


@shared_task
def expire_sessions() -> int:
    """Open platform checkout sessions (`cs_`) past their `expires_at` expire, with their waiting orders."""
    return sessions.platform_sessions_expire_due()
