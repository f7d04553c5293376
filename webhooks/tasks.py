from celery import shared_task

from webhooks.delivery import attempt_delivery, due_delivery_ids


@shared_task(acks_late=True)
def deliver_webhook(delivery_id: str) -> None:
    """One attempt of one delivery; a no-op when it is not due (already sent, claimed, or gone)."""
    attempt_delivery(delivery_id)


@shared_task
def sweep_due_deliveries() -> int:
    """Hand every due delivery to a worker: retries, and anything whose task was lost."""
    ids = due_delivery_ids()
    for delivery_id in ids:
        deliver_webhook.delay(delivery_id)
    return len(ids)
