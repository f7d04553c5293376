from django.db import models


class ClusterIdentity(models.Model):
    """What every node sharing this database must agree on, written by `migrate` (core/cluster.py).

    One row. The keys are kept as fingerprints (HMAC-derived, one-way): the row tells whether a node holds
    the same keys, never what they are.
    """

    code_version = models.CharField(max_length=64)
    encryption_key_fingerprint = models.CharField(max_length=64)
    secret_key_fingerprint = models.CharField(max_length=64)
    migrated_at = models.DateTimeField()

    class Meta:
        verbose_name = "cluster identity"
        verbose_name_plural = "cluster identity"

    def __str__(self) -> str:
        return f"code {self.code_version}"
