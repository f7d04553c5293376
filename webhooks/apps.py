from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self):
        from webhooks import receivers  # noqa: F401 - erases its copies of a customer's personal data
