from django.apps import AppConfig


class ChainsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "chains"
    verbose_name = "Chains"
