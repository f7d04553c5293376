from django.apps import AppConfig


class RefundsConfig(AppConfig):
    name = "refunds"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from refunds import handlers  # noqa: F401  registers the deposit and outbox handlers of `refund:` owners
