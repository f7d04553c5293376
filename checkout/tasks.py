from celery import shared_task

from checkout import sessions


@shared_task
def expire_sessions() -> int:
    """Open checkout sessions past their `expires_at` expire (either interface's), with their waiting orders."""
    return sessions.sessions_expire_due()


# The order interface's sessions expired under this name while they lived in the orders app: a message a
# previous release queued under it still runs, once, as this task. Nothing sends it any more.
@shared_task(name="orders.tasks.expire_checkout_sessions")
def expire_sessions_queued_before() -> int:
    return expire_sessions()


@shared_task
def flush_views() -> int:
    """The hosted and widget pages' buffered views into the database (checkout/visits.py)."""
    from checkout.visits import flush_views as flush

    return flush()
