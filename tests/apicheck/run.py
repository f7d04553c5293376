"""`make apicheck`: schemathesis against both interfaces of a real server, as CI runs it.

Starts gunicorn on a fresh SQLite database (tokens loaded, one admin key, rate
limits out of the way), then runs schemathesis over every operation of
`/api/schema/` with a fixed seed and bounded examples, checking that no
request gets a server error and that no request the schema allows is refused
(`positive_data_acceptance`). Exits with schemathesis's status.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"
MAX_EXAMPLES = os.environ.get("APICHECK_MAX_EXAMPLES", "25")
SEED = os.environ.get("APICHECK_SEED", "20261123")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    var_dir = Path(tempfile.mkdtemp(prefix="apicheck-"))
    env = {
        **os.environ,
        "SERVICE_ENV": "development",
        "VAR_DIR": str(var_dir),
        "DATABASE_URL": "",
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "",
        "PLATFORM_RATE_LIMIT_PER_MINUTE": "1000000",
        "QUICK_PAY_RATE_LIMIT_PER_MINUTE": "1000000",
        "ORDER_WRITE_RATE_LIMIT_PER_MINUTE": "1000000",
        "AUTH_FAILURE_RATE_LIMIT_PER_MINUTE": "1000000",
        # Orders and quick payments on the shipped list's chains, as if the factory were deployed there.
        "DEPOSIT_FACTORY_ADDRESS": "0x5FbDB2315678afecb367f032d93F642f64180aa3",
        "WEBHOOK_LISTEN_MAX_WAIT_SECONDS": "1",  # a long poll answers within a second here, events or none
        "GUNICORN_ACCESS_LOG": "",  # the server runs with the production config: no line per request here
    }
    env.pop("DJANGO_DEBUG", None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([*manage, "load_tokens"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    created = subprocess.run(
        [*manage, "create_api_key", "--org", "apicheck", "--name", "apicheck", "--permissions", "admin"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    key = created.stdout.strip().splitlines()[-1]
    port = _free_port()
    server = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "config.wsgi:application",
            "--config",  # the production server's settings (its request line limit, its JSON 414)
            "python:config.gunicorn_conf",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--worker-class",
            "gthread",
            "--threads",
            "4",
            "--no-control-socket",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/schema/", timeout=5).close()  # noqa: S310 - our own server
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        return subprocess.run(
            [
                str(BIN / "schemathesis"),
                "--config-file",
                str(CONFIG),
                "run",
                f"{base}/api/schema/",
                "--header",
                f"Authorization: Bearer {key}",
                "--seed",
                SEED,
                "--max-examples",
                MAX_EXAMPLES,
                *sys.argv[1:],
            ],
            cwd=ROOT,
            env={**env, "SCHEMATHESIS_HOOKS": ""},
        ).returncode
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
