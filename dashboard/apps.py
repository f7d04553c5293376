from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Merchant dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from dashboard import members
        from merchant.signals import payout_defaults_changed

        # Whoever changes where an organization's payouts go (a key, a member, staff), its owners are told.
        payout_defaults_changed.connect(
            members.on_payout_defaults_changed, dispatch_uid="dashboard.payout_defaults_changed", weak=False
        )
