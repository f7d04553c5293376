"""Production settings refuse to start without their secrets, pass Django's deployment checks, and keep
Django's debug pages apart from the development conveniences."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECRET = "k3y-" + "x7Qp9zL2mN4vB8wR1tY6uI0oP5aS3dF" * 2
ENCRYPTION_KEY = "q2V0x7eB3l0m9mFh1cW2aKx0JmYk3i8nP4r5s6t7u8E="
FACTORY = "0x" + "12" * 20
VAULT = "0x" + "34" * 20


def _manage(*args, **env):
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("DJANGO_", "SERVICE_ENV", "ENCRYPTION_KEY", "WEBHOOK_SECRET_KEY", "DEPOSIT_", "VAULT_", "RELAY_")
        )
    }
    # Production delivers through the relay provider, whose depository must be pinned (orders.checks).
    pinned = {"RELAY_DEPOSITORIES": "8453:0x" + "56" * 20}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **pinned, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_manage_py_works_in_development_without_extra_variables():
    result = _manage("check")
    assert result.returncode == 0, result.stderr


def test_production_without_secret_key_refuses_to_start():
    result = _manage("check", SERVICE_ENV="production")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_manage_py_with_a_secret_key_is_production():
    """A production shell always has the secret key: manage.py then needs the rest of production's settings."""
    result = _manage("check", DJANGO_SECRET_KEY=SECRET, DEPOSIT_FACTORY_ADDRESS=FACTORY, VAULT_ADDRESS=VAULT)
    assert result.returncode != 0
    assert "ENCRYPTION_KEY must be set in production" in result.stderr


@pytest.mark.parametrize("factory", ["0x" + "00" * 20, "0x1234", "factory"])
def test_a_deposit_factory_must_be_an_address(factory):
    result = _manage(
        "check",
        SERVICE_ENV="production",
        DJANGO_SECRET_KEY=SECRET,
        ENCRYPTION_KEY=ENCRYPTION_KEY,
        DEPOSIT_FACTORY_ADDRESS=factory,
    )
    assert result.returncode != 0
    assert "DEPOSIT_FACTORY_ADDRESS must be the address of the deployed DepositFactory" in result.stderr


def test_production_starts_without_chains_and_refuses_a_bad_seed():
    """Chains are rows added with `manage.py chains add` (or seeded from CHAINS): a first start has none, and
    `manage.py chains check`, the readiness probe, says so (tests/chains/test_chain_rows.py)."""
    result = _manage(
        "check",
        SERVICE_ENV="production",
        DJANGO_SECRET_KEY=SECRET,
        ENCRYPTION_KEY=ENCRYPTION_KEY,
        VAULT_ADDRESS=VAULT,
    )
    assert result.returncode == 0, result.stderr

    result = _manage(
        "check",
        SERVICE_ENV="production",
        DJANGO_SECRET_KEY=SECRET,
        ENCRYPTION_KEY=ENCRYPTION_KEY,
        VAULT_ADDRESS=VAULT,
        CHAINS="[{not json",
    )
    assert result.returncode != 0 and "CHAINS is not JSON" in result.stderr


def test_production_needs_a_vault():
    result = _manage(
        "check",
        SERVICE_ENV="production",
        DJANGO_SECRET_KEY=SECRET,
        ENCRYPTION_KEY=ENCRYPTION_KEY,
        DEPOSIT_FACTORY_ADDRESS=FACTORY,
    )
    assert result.returncode != 0
    assert "VAULT_ADDRESS is not set" in result.stderr


def test_deploy_check_is_clean_in_production_mode():
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        SERVICE_ENV="production",
        DJANGO_SECRET_KEY=SECRET,
        DJANGO_ALLOWED_HOSTS="checkout.example.com",
        ENCRYPTION_KEY=ENCRYPTION_KEY,
        DEPOSIT_FACTORY_ADDRESS=FACTORY,
        VAULT_ADDRESS=VAULT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_debug_pages_are_refused_in_production():
    result = _manage(
        "check",
        SERVICE_ENV="production",
        DJANGO_DEBUG="1",
        DJANGO_SECRET_KEY=SECRET,
        ENCRYPTION_KEY=ENCRYPTION_KEY,
        DEPOSIT_FACTORY_ADDRESS=FACTORY,
    )
    assert result.returncode != 0
    assert "DJANGO_DEBUG" in result.stderr


def test_development_does_not_turn_on_debug_pages(settings):
    from django.conf import settings as live

    assert (live.DEVELOPMENT, live.DEBUG) == (True, False)


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", ["/api/", "/api/nope", "/static/nope", "/nope", "/orders/x/y/z"])
def test_unknown_paths_answer_json_404_in_the_root_envelope(client, settings, debug, path):
    settings.DEBUG = debug
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert (body["success"], body["statusCode"]) == (False, 404)


@pytest.mark.parametrize("debug", [False, True])
def test_unknown_platform_paths_answer_json_404_in_the_platform_envelope(client, settings, debug):
    settings.DEBUG = debug
    response = client.get("/api/v1/nope")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "resource_not_found"


def test_production_with_the_relay_provider_and_no_pinned_depository_refuses_to_start():
    """It started and then refunded every ERC-20 order ("not the relay provider's depository"): issue 64,
    item 8."""
    production = {
        "SERVICE_ENV": "production",
        "DJANGO_SECRET_KEY": SECRET,
        "ENCRYPTION_KEY": ENCRYPTION_KEY,
        "VAULT_ADDRESS": VAULT,
    }
    refused = _manage("check", **production, RELAY_DEPOSITORIES="")
    assert refused.returncode != 0
    assert "orders.E001" in refused.stderr and "RELAY_DEPOSITORIES" in refused.stderr
    migrate = _manage("migrate", "--plan", **production, RELAY_DEPOSITORIES="")
    assert migrate.returncode != 0 and "RELAY_DEPOSITORIES" in migrate.stderr
    assert _manage("check", **production, RELAY_PROVIDER="devnet", RELAY_DEPOSITORIES="").returncode == 0
