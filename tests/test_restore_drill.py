"""`make restore-drill` in the suite (tools/restore_drill.py), with fewer orders: a backup taken while orders
settle, the service killed and restored from it; every order finishes, nothing is paid twice, reconcile is
clean. It needs PostgreSQL (pg_dump, pg_restore) and Redis, so it runs in the suite's PostgreSQL pass."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from tests.devnets import anvil_path

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql" or not settings.REDIS_URL,
        reason="the restore drill runs in the PostgreSQL + Redis pass of the suite",
    ),
    pytest.mark.skipif(anvil_path() is None, reason="anvil is not installed (make install)"),
    pytest.mark.skipif(shutil.which("pg_dump") is None, reason="pg_dump is not installed"),
]


def test_the_restore_drill_loses_nothing_and_pays_nothing_twice():
    env = {
        **os.environ,
        "DRILL_ORDERS": "8",
        "DRILL_DATABASE_A": "checkout_drill_suite_a",
        "DRILL_DATABASE_B": "checkout_drill_suite_b",
        "DRILL_REDIS_DBS": "8,9",
    }
    done = subprocess.run(
        [sys.executable, "tools/restore_drill.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "RESTORE DRILL PASSED" in done.stdout
    figures = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
    assert figures["in_flight_at_backup"] > 0 and figures["signed_after_backup"] > 0
    assert figures["adopted"] > 0 and figures["paid_twice"] == 0
    assert figures["reconcile_clean"] is True
