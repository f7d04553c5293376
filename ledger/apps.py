from django.apps import AppConfig


class LedgerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ledger"
    verbose_name = "Ledger"

    def ready(self) -> None:
        from ledger import (
            metrics,  # noqa: F401 - what /metrics reads of the reconciliations (observability.collector)
            observed,  # noqa: F401 - observes every deposit and outbox outcome (chains.handlers)
        )
