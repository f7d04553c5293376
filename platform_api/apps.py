from django.apps import AppConfig


class PlatformApiConfig(AppConfig):
    name = "platform_api"
    verbose_name = "Platform"

    def ready(self):
        # The OpenAPI auth extension; a key's row that changes or goes (staff renaming it, its organization
        # deleted) is read again (key_cache's receivers).
        from platform_api import key_cache, schema  # noqa: F401
