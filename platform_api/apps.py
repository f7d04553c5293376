from django.apps import AppConfig


class PlatformApiConfig(AppConfig):
    name = "platform_api"
    verbose_name = "Platform"
