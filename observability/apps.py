import logging

from django.apps import AppConfig
from django.conf import settings


class ObservabilityConfig(AppConfig):
    name = "observability"
    verbose_name = "Metrics and logs"

    def ready(self) -> None:
        if settings.LOG_FORMAT == "json":
            logging.captureWarnings(True)  # a library's warning is a JSON line too, not text on stderr
