from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CoreConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "core"
    verbose_name = "Deployment"

    def ready(self) -> None:
        post_migrate.connect(_record_identity, sender=self, dispatch_uid="core.cluster.record")


def _record_identity(*, using: str = "default", **kwargs) -> None:
    """After `migrate` (the deploy step, and a test database's flush): the code version and the keys that
    every node of this database must share (core/cluster.py)."""
    from core.cluster import cluster_record

    if using == "default":
        cluster_record()
