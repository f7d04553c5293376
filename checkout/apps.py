from django.apps import AppConfig


class CheckoutConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "checkout"
    verbose_name = "Checkout"

    def ready(self) -> None:
        # What an order's lifecycle means for its session (orders.events), a customer's erasure (a signal), the
        # bodies of the checkout's events (webhooks.payloads): registered by decorators where they are defined.
        from checkout import payloads, subscribers  # noqa: F401
