from __future__ import annotations

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.factories import OrganizationFactory, make_api_key


@pytest.fixture(autouse=True)
def _isolated_rate_limits():
    """Rate-limit counters must not leak between tests (Redis keeps them across the run)."""
    if settings.REDIS_URL:
        from platform_api.ratelimit import _redis_client

        client = _redis_client()
        for key in client.scan_iter("ratelimit:*"):
            client.delete(key)
    yield


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def organization(db):
    return OrganizationFactory(slug="acme")


@pytest.fixture
def admin_key(organization):
    return make_api_key(organization, permissions=["admin"], name="admin")


@pytest.fixture
def admin_client(admin_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {admin_key[1]}")
    return client


def client_for(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


def _database_url_for_subprocess() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def celery_worker(transactional_db):
    """A real Celery worker process on the configured broker, reading the test database.

    It consumes a queue of its own, so tasks meant for it are sent with
    `.apply_async(queue=celery_worker)`; the fixture's value is that queue name.
    """
    import os
    import subprocess
    import sys
    import uuid
    from pathlib import Path

    queue = f"test-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "DATABASE_URL": _database_url_for_subprocess(), "DJANGO_DEBUG": "1"}
    root = Path(__file__).resolve().parent.parent
    log = open(root / "var" / f"worker-{queue}.log", "w+")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-Q", queue,
         "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        yield queue
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.seek(0)
        output = log.read()
        log.close()
        os.unlink(log.name)
        if process.returncode not in (0, -15) and "Traceback" in output:
            print(output)


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):
    """Poll until `predicate()` is truthy; returns its value or fails the test."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"condition not met within {timeout} seconds")
