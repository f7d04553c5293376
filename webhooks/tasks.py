from celery import shared_task

from webhooks.delivery import deliver_and_continue, due_delivery_ids


@shared_task(acks_late=True)
def deliver_webhook(delivery_id: str) -> None:
    """An attempt of the delivery, then of its endpoint's next ones while the thread keeps the slot.

    A no-op when the delivery is not due (already sent, claimed, or gone).
    """
    deliver_and_continue(delivery_id)


@shared_task
def sweep_due_deliveries() -> int:
    """Hand every due delivery to a worker: retries, and anything whose task was lost."""
    ids = due_delivery_ids()
    for delivery_id in ids:
        deliver_webhook.delay(delivery_id)
    return len(ids)
