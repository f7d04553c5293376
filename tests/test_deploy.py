"""The deployment files: the compose file runs every role of the image, and gives the keys to the signer
alone; the entrypoint knows every role the compose file names; the image leaves secrets out."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
ROLES = {"web", "worker", "signer", "webhooks", "beat", "migrate"}


def _compose() -> dict:
    return yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())


def test_every_role_runs_from_the_image_and_only_the_signer_has_keys():
    services = _compose()["services"]
    roles = {
        name: spec for name, spec in services.items() if spec.get("image") == "localhost/checkout:latest"
    }
    assert set(roles) == ROLES
    assert all(spec["command"] == [name] for name, spec in roles.items())
    for name, spec in roles.items():
        keys = {
            k
            for k in spec.get("environment", {})
            if "KEYSTORE" in k or "PASSPHRASE" in k or "PRIVATE_KEY" in k
        }
        assert bool(keys) == (name == "signer") and bool(spec.get("secrets")) == (name == "signer"), name
    assert all(spec.get("restart") for spec in services.values())
    assert "healthcheck" in services["web"] and "healthcheck" in services["postgres"]
    assert services["web"]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}


def test_the_entrypoint_refuses_an_unknown_role():
    done = subprocess.run(
        ["/bin/sh", str(ROOT / "deploy" / "entrypoint.sh"), "miner"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 64 and "unknown role 'miner'" in done.stderr
    assert all(f"  {role})" in (ROOT / "deploy" / "entrypoint.sh").read_text() for role in ROLES)


def test_the_image_leaves_secrets_and_local_state_out():
    ignored = (ROOT / ".containerignore").read_text().split()
    assert {".env", ".git", ".venv", "var", "*.key", "*.pem", "*keystore*"} <= set(ignored)
    assert (ROOT / ".dockerignore").read_text() == (ROOT / ".containerignore").read_text()
    containerfile = (ROOT / "Containerfile").read_text()
    assert "\nUSER checkout\n" in containerfile
    assert "type=secret,id=ca_bundle" in containerfile  # the CA bundle is mounted, never copied
