"""`make run` creates the PostgreSQL database DATABASE_URL names when the server has none by that name."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVER = "postgres://postgres@127.0.0.1:5432"


def _psql(*statements: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True, connect_timeout=3) as admin:
        for statement in statements:
            admin.execute(statement)


@pytest.fixture
def fresh_name():
    import psycopg

    try:
        _psql("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL at {SERVER}: {exc}")
    name = f"created_{uuid.uuid4().hex[:10]}"
    yield name
    _psql(f'DROP DATABASE IF EXISTS "{name}"')


def test_a_missing_database_is_created_once_and_an_existing_one_left_alone(fresh_name):
    env = {**os.environ, "DATABASE_URL": f"{SERVER}/{fresh_name}", "SERVICE_ENV": "development"}

    def create():
        return subprocess.run(
            [sys.executable, "manage.py", "create_database"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )

    first = create()
    assert first.returncode == 0 and f"Created the PostgreSQL database {fresh_name}." in first.stdout
    second = create()
    assert second.returncode == 0 and second.stdout == ""
