from django.apps import AppConfig


class OnrampConfig(AppConfig):
    name = "onramp"
    verbose_name = "Fiat onramp"

    def ready(self) -> None:
        from onramp.adapters import OrderOnramp
        from orders.onramps import register_onramp

        register_onramp(OrderOnramp())
