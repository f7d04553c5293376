from django.apps import AppConfig


class FacilitatorConfig(AppConfig):
    name = "facilitator"
    verbose_name = "x402 facilitator"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from facilitator import handlers  # noqa: F401  registers the outbox handlers of `x402:` keys
