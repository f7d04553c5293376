from django.apps import AppConfig


class QuickpayConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "quickpay"
    verbose_name = "Quick pay"

    def ready(self) -> None:
        from quickpay import handlers  # noqa: F401 - registers its deposit and outbox handlers (chains.handlers)
