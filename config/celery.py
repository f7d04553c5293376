import os

from celery import Celery
from celery.signals import worker_init

from config.threads import tune_thread_switching

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("checkout")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _tune_thread_switching(**_):
    tune_thread_switching()  # the webhook worker runs deliveries on a thread pool
