from django.apps import AppConfig


class OnrampConfig(AppConfig):
    name = "onramp"
    verbose_name = "Fiat onramp"

    def ready(self) -> None:
        from onramp import adapters  # noqa: F401 - its adapter is order creation's onramp (orders.onramps)
