"""What `make run` started with is what a second terminal's manage.py uses: the same database, the same
public address; a command told otherwise says so while the server runs elsewhere."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Its servers run on their own SQLite database and file broker: once per CI run is enough (tests/conftest.py).
pytestmark = pytest.mark.own_stack


def _environment(var: Path, **extra: str) -> dict[str, str]:
    """A second terminal's environment: no database settings of its own, the record switched on."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "DATABASE_URL",
            "REDIS_URL",
            "CELERY_BROKER_URL",
            "PORT",
            "PUBLIC_BASE_URL",
            "DJANGO_SECRET_KEY",
        )
    }
    return {**clean, "VAR_DIR": str(var), "MANAGE_USES_RUN_SETTINGS": "1", "SERVICE_ENV": "", **extra}


def _record(var: Path, *, port: int, database: str) -> None:
    env = {**_environment(var), "DATABASE_URL": database, "SERVICE_ENV": "development"}
    subprocess.run(
        [sys.executable, "-m", "config.runenv", "record", "--port", str(port)], cwd=ROOT, env=env, check=True
    )


def _manage(var: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = _environment(var, **extra)
    env = {k: v for k, v in env.items() if v != ""}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """What `PORT=8800 DATABASE_URL=sqlite:///…/other.sqlite3 make run` records, its database migrated."""
    var = tmp_path_factory.mktemp("var")
    database = var / "other.sqlite3"
    _record(var, port=8800, database=f"sqlite:///{database}")
    migrated = _manage(var, "migrate", "-v0")
    assert migrated.returncode == 0, migrated.stderr
    return var, database


def test_the_record_is_the_servers_settings_readable_by_its_owner_only(server):
    var, database = server
    record = (var / "run.env").read_text()
    assert f"DATABASE_URL='sqlite:///{database}'" in record and "PORT='8800'" in record
    assert "PUBLIC_BASE_URL='http://127.0.0.1:8800'" in record and "SERVICE_ENV='development'" in record
    assert stat.S_IMODE((var / "run.env").stat().st_mode) == 0o600
    assert database.exists()  # the second terminal's migrate went to the recorded database, not db.sqlite3
    assert not (var / "db.sqlite3").exists()


def test_a_key_made_in_a_second_terminal_is_in_the_servers_database(server):
    """Found by following the README on PostgreSQL: the key was made in the SQLite file, and refused."""
    var, database = server
    made = _manage(var, "create_api_key", "--org", "acme", "--name", "dev", "--permissions", "admin")
    assert made.returncode == 0, made.stderr
    with sqlite3.connect(database) as db:
        assert db.execute("select count(*) from platform_api_apikey").fetchone() == (1,)


def test_links_are_printed_on_the_port_the_server_runs_on(server):
    """Found with PORT=8800: create_member printed an invitation on port 8000."""
    var, _ = server
    made = _manage(var, "create_member", "--org", "acme", "--email", "owner@shop.example", "--role", "owner")
    assert made.returncode == 0, made.stderr
    assert "http://127.0.0.1:8800/dashboard/invitations/" in made.stdout


def test_a_command_told_another_database_says_so_while_the_server_runs(server, tmp_path):
    var, database = server
    (var / "run.pid").write_text(str(os.getpid()))  # a running supervisor
    try:
        told = _manage(var, "check", DATABASE_URL="postgres://app:s3cret@127.0.0.1:5432/elsewhere")
        assert "this command uses the database postgres://app:***@127.0.0.1:5432/elsewhere" in told.stderr
        assert f"uses sqlite:///{database}" in told.stderr and "s3cret" not in told.stderr
        same = _manage(var, "check")
        assert "note:" not in same.stderr
    finally:
        (var / "run.pid").unlink()
    stopped = _manage(var, "check", DATABASE_URL="postgres://app:s3cret@127.0.0.1:5432/elsewhere")
    assert "note:" not in stopped.stderr  # no server runs: nothing to compare with


def test_the_servers_address_for_the_readme_examples(server):
    var, _ = server
    env = {k: v for k, v in _environment(var).items() if v != ""}
    shown = subprocess.run(
        [sys.executable, "-m", "config.runenv", "url"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert shown.stdout.strip() == "http://127.0.0.1:8800"


def test_a_second_make_run_on_the_same_state_directory_is_refused_and_changes_nothing(tmp_path):
    """Two `make run` from one checkout with other PORTs shared var/ (the file broker's queue, beat's lock):
    each took the other's tasks, and one server's payments were never settled (issue 64, item 16)."""
    env = {**_environment(tmp_path), "VAR_DIR": str(tmp_path)}
    first = subprocess.run(
        [sys.executable, "-m", "config.runenv", "record", "--port", "8001"], cwd=ROOT, env=env, check=True
    )
    assert first.returncode == 0
    (tmp_path / "run.pid").write_text(f"{os.getpid()}\n")  # a supervisor that runs (this process)
    recorded = (tmp_path / "run.env").read_text()

    second = subprocess.run(
        [sys.executable, "-m", "config.runenv", "record", "--port", "9000"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )

    assert second.returncode == 1
    assert f"pid {os.getpid()}, port 8001" in second.stderr and "VAR_DIR=" in second.stderr
    assert (tmp_path / "run.env").read_text() == recorded
    elsewhere = tmp_path / "other"
    apart = subprocess.run(
        [sys.executable, "-m", "config.runenv", "record", "--port", "9000"],
        cwd=ROOT,
        env={**env, "VAR_DIR": str(elsewhere)},
    )
    assert apart.returncode == 0 and "PORT='9000'" in (elsewhere / "run.env").read_text()
