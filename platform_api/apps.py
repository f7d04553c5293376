from django.apps import AppConfig


class PlatformApiConfig(AppConfig):
    name = "platform_api"
    verbose_name = "Platform"

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from platform_api import key_cache, schema  # noqa: F401 - registers the OpenAPI auth extension
        from platform_api.models import ApiKey

        # A key's row that changes or goes (staff renaming it, its organization deleted) is read again.
        post_save.connect(key_cache.on_saved, sender=ApiKey, dispatch_uid="api_key_record_saved")
        post_delete.connect(key_cache.on_deleted, sender=ApiKey, dispatch_uid="api_key_record_deleted")
