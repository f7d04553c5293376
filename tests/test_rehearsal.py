"""`make rehearsal` in the suite: the service in production mode on two chains it did not start
(tools/rehearsal.py), with fewer orders. It needs PostgreSQL and Redis, so it runs in the suite's PostgreSQL pass."""

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
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "rehearsal failed"))]
    assert done.returncode == 0, "\n".join(failed) + "\n" + done.stdout[-4000:] + done.stderr[-8000:]
    report = done.stdout
    assert "REHEARSAL PASSED" in report
    for line in (
        "ok   swap orders: {'executed': 8} (every one executed)",  # 4 from the inventory, 4 through the relay
        "ok   native orders: {'executed': 1} (every one executed)",
        # every contract type, each way: called from the inventory on 42161, by the provider on 8453
        "ok   contract orders: {'executed': 10} (every one executed)",
        "ok   reverting orders: {'refunded': 5} (every one refunded)",
        "ok   mint_nft (from the inventory): the recipient owns the NFT",
        "ok   mint_nft (through the relay): the recipient owns the NFT",
        "ok   join_tournament (from the inventory): the recipient joined",
        "ok   join_tournament (through the relay): the recipient joined",
        "ok   call router on 42161: +0 (expected +0)",
        "ok   both chains stay healthy, the origin on its fallback endpoint",
        "ok   reconcile finds no difference on chain 8453",
        "ok   reconcile finds no difference on chain 42161",
        "ok   every webhook the provider signed was verified",
        "9 orders delivered from the solver's inventory",  # 4 swaps, 5 calls
    ):
        assert line in report, line
    assert "the watcher read new blocks" in report
    for group in (
        "swap types from inventory",
        "contract types from inventory",
        "contract types through the relay",
    ):
        assert f"= {group}" in report, group
    assert "FAIL" not in report.replace("REHEARSAL FAILED", "")
