from django.apps import AppConfig


class CheckoutConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "checkout"
    verbose_name = "Checkout"

    def ready(self) -> None:
        # What an order's lifecycle means for its session (orders.events; the checkout's own orders, and the
        # order interface's with the binder of their sessions), a customer's erasure (a signal), the bodies
        # of the checkout's events (webhooks.payloads): registered by decorators where they are defined.
        from checkout import interface, payloads, quick_payments, subscribers  # noqa: F401
