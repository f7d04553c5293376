"""`make rehearsal` in the suite: the service in production mode on a chain it did not start (tools/rehearsal.py),
with fewer orders. It needs PostgreSQL and Redis, so it runs in the suite's PostgreSQL pass."""

import os
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
        reason="the rehearsal runs in the PostgreSQL + Redis pass of the suite",
    ),
    pytest.mark.skipif(anvil_path() is None, reason="anvil is not installed (make install)"),
]


def test_the_production_rehearsal_passes(tmp_path):
    env = {
        **os.environ,
        "REHEARSAL_ORDERS": "4",
        "REHEARSAL_DATABASE": "checkout_rehearsal_suite",
        "REHEARSAL_REDIS": "redis://127.0.0.1:6379/12",
        "REHEARSAL_DIR": str(tmp_path / "rehearsal"),
    }
    done = subprocess.run(
        [sys.executable, "tools/rehearsal.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = done.stdout
    assert "REHEARSAL PASSED" in report
    assert "4 of 4 swap-type orders executed" in report
    assert "a contract wallet's native payment executed" in report
    assert (
        "the watcher read new blocks" in report
        and "the chain stays healthy with its fallback endpoint" in report
    )
    for order_type in ("custom", "custom_exact_in", "mint_nft", "join_tournament", "fund_tournament"):
        assert f"ok   {order_type}: refunded" in report
