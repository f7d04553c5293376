"""Many nodes, one deployment: what a node checks before it takes work, so that a node that would split the
cluster refuses to start instead.

`migrate`, the deploy step, records in one row of the shared database (core.models.ClusterIdentity) the
version of the code that migrated it and one-way fingerprints of ENCRYPTION_KEY and DJANGO_SECRET_KEY. Every
web server, worker and beat compares its own before it starts (config/gunicorn_conf.py, config/celery.py):

- a different ENCRYPTION_KEY: the node could read none of the secrets the others wrote (webhook signing
  secrets, idempotent responses, keys of the relay provider) and would write ones they cannot read;
- a different DJANGO_SECRET_KEY: staff sessions and signed values made on one node fail on the other;
- a different code version, or migrations this code has and the database has not (or the reverse): tasks and
  rows that one version writes and the other misreads. A deploy runs `migrate` with the new code first (it
  records the new version), then restarts the nodes one by one; a node still on the old code keeps running
  until it is restarted, and a node started on old code after the deploy refuses.

The code version is a digest of the service's own Python source (every app, migrations included), so two
checkouts of one commit agree without git. `CLUSTER_CHECK_CODE_VERSION` (on in production) turns that one
comparison off in development, where the code changes under a running database all day; the keys and the
migrations are always compared.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from core.crypto import master_key


class ClusterSplit(RuntimeError):
    """This node must not join the deployment's cluster; the message says why and what to do."""


@dataclass(frozen=True)
class NodeIdentity:
    code_version: str
    encryption_key_fingerprint: str
    secret_key_fingerprint: str


@lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of every Python file of the service's own packages (the apps and config), by relative path."""
    root = Path(settings.BASE_DIR)
    packages = sorted(
        {Path(app.path) for app in apps.get_app_configs() if Path(app.path).is_relative_to(root)}
        | {root / "config"}
    )
    digest = hashlib.sha256()
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _fingerprint(key: bytes, what: str) -> str:
    return hmac.new(key, f"cluster-identity:{what}".encode(), hashlib.sha256).hexdigest()[:32]


def node_identity() -> NodeIdentity:
    return NodeIdentity(
        code_version=code_version(),
        encryption_key_fingerprint=_fingerprint(master_key(), "encryption-key"),
        secret_key_fingerprint=_fingerprint(settings.SECRET_KEY.encode(), "secret-key"),
    )


_KEYS = (
    ("encryption_key_fingerprint", "ENCRYPTION_KEY"),
    ("secret_key_fingerprint", "DJANGO_SECRET_KEY"),
)


def cluster_record() -> None:
    """After `migrate`: this code's version becomes the deployment's. The keys are recorded the first time,
    and a migrate run with other keys than the recorded ones is refused (ClusterSplit)."""
    from core.models import ClusterIdentity

    mine = node_identity()
    with transaction.atomic():
        row = ClusterIdentity.objects.select_for_update().first()
        if row is None:
            ClusterIdentity.objects.create(**mine.__dict__, migrated_at=timezone.now())
            return
        for field, variable in _KEYS:
            if getattr(row, field) != getattr(mine, field):
                raise ClusterSplit(
                    f"{variable} is not the one this database's other nodes use (its fingerprint differs): "
                    f"give this node the deployment's {variable}"
                )
        row.code_version, row.migrated_at = mine.code_version, timezone.now()
        row.save(update_fields=["code_version", "migrated_at"])


def check_node(role: str) -> None:
    """Raise ClusterSplit, naming `role` (web, worker, beat) and what differs, when this node must not start."""
    from django.db.migrations.executor import MigrationExecutor

    from core.models import ClusterIdentity

    prefix = f"this {role} node refuses to start: "
    try:
        executor = MigrationExecutor(connection)
        unapplied = executor.migration_plan(executor.loader.graph.leaf_nodes())
        unknown = executor.loader.applied_migrations.keys() - executor.loader.graph.nodes.keys()
        row = None if unapplied or unknown else ClusterIdentity.objects.first()
    except DatabaseError as exc:
        raise ClusterSplit(f"{prefix}its database cannot be read ({exc})") from exc
    if unapplied:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in unapplied[:3])
        more = f" and {len(unapplied) - 3} more" if len(unapplied) > 3 else ""
        raise ClusterSplit(
            f"{prefix}the database lacks migrations of this code ({names}{more}); run `manage.py migrate`"
        )
    if unknown:
        names = ", ".join(f"{app}.{name}" for app, name in sorted(unknown)[:3])
        raise ClusterSplit(
            f"{prefix}the database was migrated by newer code ({names}); deploy that code on this node"
        )
    if row is None:
        raise ClusterSplit(f"{prefix}the database has no cluster identity yet; run `manage.py migrate`")
    mine = node_identity()
    for field, variable in _KEYS:
        if getattr(row, field) != getattr(mine, field):
            raise ClusterSplit(
                f"{prefix}its {variable} is not the one the deployment's other nodes use (fingerprints differ); "
                f"give it the deployment's {variable}"
            )
    if settings.CLUSTER_CHECK_CODE_VERSION and row.code_version != mine.code_version:
        raise ClusterSplit(
            f"{prefix}its code ({mine.code_version}) is not the version the database was last migrated by "
            f"({row.code_version} at {row.migrated_at:%Y-%m-%d %H:%M:%S} UTC); deploy that code, or run "
            "`manage.py migrate` with this code first if it is the new release"
        )
