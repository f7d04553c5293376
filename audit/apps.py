from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit log"

    def ready(self):
        from audit import receivers  # noqa: F401 - records every platform write (platform_api.signals)
