from celery import shared_task

from webhooks import notifications
from webhooks.delivery import deliver_and_continue, deliver_event, due_delivery_ids


@shared_task(acks_late=True)
def deliver_event_webhooks(event_id: str) -> None:
    """The first attempts of a new event's deliveries, to every subscribed endpoint at once.

    A redelivered message finds the attempts already made and sends nothing again.
    """
    deliver_event(event_id)


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


@shared_task(acks_late=True)
def send_notification_email(email_id: str) -> str | None:
    """One attempt at a notification email; a no-op when it is not due (sent, in flight, or gone)."""
    return notifications.send(email_id)


@shared_task
def sweep_due_notifications() -> int:
    """Hand every due notification email to a worker: retries, and anything whose task was lost."""
    ids = notifications.due_notification_ids()
    for email_id in ids:
        send_notification_email.delay(email_id)
    return len(ids)


@shared_task
def purge_expired_webhook_events() -> int:
    """Delete the events past WEBHOOK_EVENT_RETENTION_DAYS, with their deliveries and emails."""
    from webhooks.services import webhook_events_purge

    return webhook_events_purge()
