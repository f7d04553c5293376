from django.apps import AppConfig


class OnrampConfig(AppConfig):
    name = "onramp"
    verbose_name = "Fiat onramp"
