from celery import shared_task

from checkout import sessions


@shared_task
def expire_sessions() -> int:
    """Open platform checkout sessions (`cs_`) past their `expires_at` expire, with their waiting orders."""
    return sessions.platform_sessions_expire_due()


@shared_task
def flush_views() -> int:
    """The hosted and widget pages' buffered views into the database (checkout/visits.py)."""
    from checkout.visits import flush_views as flush

    return flush()
