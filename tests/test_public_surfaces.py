"""Each app's public surface is an allow-list (pyproject.toml, [tool.checkout.public-surfaces]): every other
module of the app is protected by the app's import-linter contract, so a module added without being named is
private (`make lint` then refuses any other app importing it)."""

import tomllib
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())
PUBLIC = CONFIG["tool"]["checkout"]["public-surfaces"]
CONTRACTS = {
    contract["protected_modules"][0].split(".")[0]: contract["protected_modules"]
    for contract in CONFIG["tool"]["importlinter"]["contracts"]
    if contract["type"] == "protected"
}
NOT_MODULES = {"migrations", "__pycache__", "templates", "static", "locale", "contracts", "data"}


def top_level_modules(app: str) -> set[str]:
    found = set()
    for path in (ROOT / app).iterdir():
        if path.name in NOT_MODULES or path.name in ("__init__.py", "apps.py"):
            continue
        if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()):
            found.add(path.stem if path.suffix == ".py" else path.name)
    return found


def test_every_app_with_a_contract_declares_its_public_surface():
    assert set(PUBLIC) == set(CONTRACTS)


@pytest.mark.parametrize("app", sorted(CONTRACTS))
def test_every_module_is_public_by_name_or_protected(app):
    protected = CONTRACTS[app]
    unnamed = {
        module
        for module in top_level_modules(app) - set(PUBLIC[app])
        if not any(entry == f"{app}.{module}" or entry.startswith(f"{app}.{module}.") for entry in protected)
    }
    assert unnamed == set(), f"name them public in pyproject.toml or protect them: {sorted(unnamed)}"
    assert not {entry.split(".")[1] for entry in protected} & set(PUBLIC[app])  # never both
