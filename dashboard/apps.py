from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Merchant dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Whoever changes where an organization's payouts go (a key, a member, staff), its owners are told.
        from dashboard import members  # noqa: F401
