from django.apps import AppConfig


class CheckoutConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "checkout"
    verbose_name = "Checkout"

    def ready(self) -> None:
        from checkout import payloads, subscribers

        subscribers.connect()
        payloads.register()
