import decimal

from django.apps import AppConfig
from django.db.models.signals import post_migrate

# Token amounts are uint256 (up to 78 digits); Decimal's default context keeps 28 significant digits and
# rounds the rest away, so `Decimal(amount).scaleb(-18)` of a 29-digit amount was already wrong. Every
# thread starts from DefaultContext (gunicorn's and Celery's are made after this), the main one is set here.
AMOUNT_PRECISION = 80


class CoreConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "core"
    verbose_name = "Deployment"

    def ready(self) -> None:
        decimal.DefaultContext.prec = AMOUNT_PRECISION
        decimal.getcontext().prec = AMOUNT_PRECISION
        post_migrate.connect(_record_identity, sender=self, dispatch_uid="core.cluster.record")


def _record_identity(*, using: str = "default", **kwargs) -> None:
    """After `migrate` (the deploy step, and a test database's flush): the code version and the keys that
    every node of this database must share (core/cluster.py)."""
    from core.cluster import cluster_record

    if using == "default":
        cluster_record()
