from django.apps import AppConfig


class LedgerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ledger"
    verbose_name = "Ledger"

    def ready(self) -> None:
        from chains.handlers import deposit_observer, outbox_observer
        from ledger.observed import deposit_posted, outbox_posted

        deposit_observer(deposit_posted)
        outbox_observer(outbox_posted)
