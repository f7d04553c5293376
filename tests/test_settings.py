"""Production settings refuse to start without a secret and pass Django's deployment checks."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _manage(*args, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_off_without_secret_key_refuses_to_start():
    result = _manage("check", DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_deploy_check_is_clean_in_production_mode():
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="k3y-" + "x7Qp9zL2mN4vB8wR1tY6uI0oP5aS3dF" * 2,
        DJANGO_ALLOWED_HOSTS="checkout.example.com",
        WEBHOOK_SECRET_KEY="q2V0x7eB3l0m9mFh1cW2aKx0JmYk3i8nP4r5s6t7u8E=",
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_debug_off_without_webhook_key_refuses_to_start():
    result = _manage(
        "check", DJANGO_DEBUG="0", DJANGO_SECRET_KEY="k3y-" + "x7Qp9zL2mN4vB8wR1tY6uI0oP5aS3dF" * 2
    )
    assert result.returncode != 0
    assert "WEBHOOK_SECRET_KEY must be set" in result.stderr
