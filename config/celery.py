import os

from celery import Celery
from celery.signals import worker_init, worker_ready

from config.threads import tune_thread_switching

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("checkout")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _tune_thread_switching(**_):
    tune_thread_switching()  # the webhook worker runs deliveries on a thread pool


@worker_ready.connect
def _resume_lost_work(sender, **_):
    """A worker that consumes the default queue starts by driving every settlement in flight: a task the
    previous worker held when it was killed is found now, not when the minute's stuck-order sweep next
    counts it as stuck (5 minutes)."""
    from django.conf import settings

    consumed = set(sender.app.amqp.queues.consume_from or sender.app.amqp.queues)
    if settings.CELERY_TASK_DEFAULT_QUEUE in consumed:
        for task in ("orders.tasks.resume_settlements", "quickpay.tasks.resume_quick_payments"):
            sender.app.send_task(task, queue=settings.CELERY_TASK_DEFAULT_QUEUE)
