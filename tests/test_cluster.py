"""Many nodes on one database and Redis: beat sends from one of them (config/beat.py), and a node that would
split the cluster refuses to start (core/cluster.py), as a real gunicorn, worker and beat."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from config.beat import LOCK_KEY, BeatLock
from core.cluster import ClusterSplit, check_node, cluster_record, node_identity
from core.crypto import master_key
from core.models import ClusterIdentity

ROOT = Path(__file__).resolve().parent.parent
OTHER_KEY = base64.urlsafe_b64encode(b"k" * 32).decode()


# --- the identity every node compares -------------------------------------------------------------------


def test_a_node_with_the_deployments_code_and_keys_joins(db, settings):
    settings.CLUSTER_CHECK_CODE_VERSION = True
    check_node("web")  # the test database was migrated by this very code, with these keys


def test_a_node_with_another_encryption_key_refuses_to_start(db, settings):
    settings.ENCRYPTION_KEY = OTHER_KEY
    with pytest.raises(ClusterSplit, match="this worker node refuses to start: its ENCRYPTION_KEY is not"):
        check_node("worker")


def test_a_node_with_another_secret_key_refuses_to_start(db, settings):
    settings.ENCRYPTION_KEY = base64.urlsafe_b64encode(master_key()).decode()  # the same encryption key
    settings.SECRET_KEY = "another-secret-key-" + "x" * 40
    with pytest.raises(ClusterSplit, match="its DJANGO_SECRET_KEY is not"):
        check_node("web")


def test_a_node_on_other_code_refuses_until_migrate_records_its_version(db, settings):
    settings.CLUSTER_CHECK_CODE_VERSION = True
    ClusterIdentity.objects.update(code_version="0123456789abcdef")  # the deployment moved on without us
    with pytest.raises(
        ClusterSplit, match=r"its code \(\w+\) is not the version the database was last migrated"
    ):
        check_node("beat")
    settings.CLUSTER_CHECK_CODE_VERSION = False  # development: the code changes under the database all day
    check_node("beat")

    settings.CLUSTER_CHECK_CODE_VERSION = True
    call_command("migrate", verbosity=0)  # the deploy step, with this code
    assert ClusterIdentity.objects.get().code_version == node_identity().code_version
    check_node("beat")


def test_migrate_with_another_key_is_refused_and_changes_nothing(db, settings):
    before = ClusterIdentity.objects.get()
    settings.ENCRYPTION_KEY = OTHER_KEY
    with pytest.raises(ClusterSplit, match="ENCRYPTION_KEY is not the one this database's other nodes use"):
        cluster_record()
    after = ClusterIdentity.objects.get()
    assert (after.encryption_key_fingerprint, after.migrated_at) == (
        before.encryption_key_fingerprint,
        before.migrated_at,
    )
    assert OTHER_KEY not in str(ClusterIdentity.objects.values().get())  # fingerprints only


# --- one beat sends ----------------------------------------------------------------------------------------


def _two_locks(tmp_path: Path, ttl: float) -> tuple[BeatLock, BeatLock]:
    return BeatLock(ttl, tmp_path / "beat.lock"), BeatLock(ttl, tmp_path / "beat.lock")


def test_one_beat_holds_the_file_lock_and_a_standby_takes_over_when_it_stops(settings, tmp_path):
    settings.REDIS_URL = ""
    first, second = _two_locks(tmp_path, ttl=10)
    assert first.hold() and first.hold()  # renewed
    assert not second.hold()
    first.release()
    assert second.hold()
    assert not first.hold()
    second.release()


def test_one_beat_holds_the_redis_lock_and_a_killed_holder_is_replaced_after_its_ttl(shared_redis, tmp_path):
    shared_redis.delete(LOCK_KEY)
    first, second = _two_locks(tmp_path, ttl=1)
    try:
        assert first.hold()
        assert not second.hold()
        time.sleep(0.6)
        assert first.hold()  # renewing pushes the expiry on
        time.sleep(0.6)
        assert not second.hold()
        time.sleep(1.2)  # the holder stopped renewing, as a killed process does
        assert second.hold()
        assert not first.hold()  # and it does not take the lock back
        second.release()
        assert shared_redis.get(LOCK_KEY) is None
        first.release()  # releasing what another holds changes nothing
        assert first.hold()
    finally:
        shared_redis.delete(LOCK_KEY)


# --- real processes ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """A database migrated by this code with the suite's keys, as a deployment's first `migrate` leaves it."""
    var = tmp_path_factory.mktemp("cluster")
    env = {
        **os.environ,
        "SERVICE_ENV": "development",
        "VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
        "CELERY_BROKER_URL": "filesystem://",
        "REDIS_URL": "",
        "DEVNET": "0",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300
    )
    return env


def _start(env: dict, *command: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_a_web_node_with_another_encryption_key_does_not_start(migrated):
    done = _start(
        {**migrated, "ENCRYPTION_KEY": OTHER_KEY},
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "config/gunicorn_conf.py",
        "--bind",
        "127.0.0.1:0",
        "config.wsgi:application",
    )
    assert done.returncode == 1
    assert "Error: this web node refuses to start: its ENCRYPTION_KEY is not" in done.stderr


def test_a_worker_on_newer_code_than_its_database_does_not_start(migrated):
    env = {**migrated, "CLUSTER_CHECK_CODE_VERSION": "1"}
    _start(env, sys.executable, "manage.py", "shell", "-c", _SET_VERSION, timeout=60)
    done = _start(
        env, sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "cluster-test", "-P", "solo"
    )
    assert done.returncode != 0
    assert "this worker node refuses to start: its code" in done.stdout + done.stderr


_SET_VERSION = (
    "from core.models import ClusterIdentity as C; C.objects.update(code_version='feedfacefeedface')"
)


def test_a_second_beat_that_does_not_take_the_lock_does_not_start(migrated, tmp_path):
    done = _start(
        migrated,
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "beat",
        "-S",
        "celery.beat:PersistentScheduler",
        "-s",
        str(tmp_path / "schedule"),
    )
    assert done.returncode != 0
    assert "this beat refuses to start: its scheduler" in done.stdout + done.stderr


def test_staff_see_the_deployments_identity_and_cannot_edit_it(staff):
    row = ClusterIdentity.objects.get()
    page = staff.get("/admin/core/clusteridentity/")
    assert page.status_code == 200
    assert row.code_version in page.content.decode()
    assert staff.get("/admin/core/clusteridentity/add/").status_code == 403
    assert staff.post(f"/admin/core/clusteridentity/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert ClusterIdentity.objects.filter(pk=row.pk).exists()
