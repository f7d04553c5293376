from django.apps import AppConfig


class PlatformApiConfig(AppConfig):
    name = "platform_api"
    verbose_name = "Platform"

    def ready(self):
        from platform_api import schema  # noqa: F401 - registers the OpenAPI auth extension
