"""The settings `make run` started the service with, so that commands in a second terminal use the same.

`make run` records them in `var/run.env` before anything starts (where the data lives: DATABASE_URL,
REDIS_URL, CELERY_BROKER_URL; how the server is reached: PORT, PUBLIC_BASE_URL; and SERVICE_ENV), as
`var/devnets.json` records the devnets' ports; the supervisor writes its pid to `var/run.pid` while it
runs. `manage.py` reads the record (python-dotenv) when its own environment names none of the three data
settings: `DATABASE_URL=postgres://… make run` in one terminal and `manage.py create_api_key …` in another
then meet in one database. A command that is told otherwise (any of the three in its environment) uses what
it is told, and when the server is running on another database it says so on stderr.

The test suite chooses its databases itself: MANAGE_USES_RUN_SETTINGS=0 (tests/conftest.py) turns the
record off for the commands it runs. Nothing secret is recorded but what a database URL holds, and the file
is readable by its owner only.

    python -m config.runenv record --port 8000
    python -m config.runenv url          # http://127.0.0.1:<the port make run serves on>
    python -m config.runenv show         # the recorded settings, passwords masked
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from dotenv import dotenv_values

DATA = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")
RECORDED = (*DATA, "PORT", "PUBLIC_BASE_URL", "SERVICE_ENV")


def var_dir() -> Path:
    """config.settings.env.VAR_DIR, read here without loading the settings (manage.py has not chosen them)."""
    return Path(os.environ.get("VAR_DIR") or Path(__file__).resolve().parent.parent / "var")


def record_path() -> Path:
    return var_dir() / "run.env"


def pid_path() -> Path:
    return var_dir() / "run.pid"


def effective(port: int) -> dict[str, str]:
    """What the service about to start will use: the environment, else the settings' defaults."""
    environ = os.environ
    service_env = environ.get("SERVICE_ENV") or "development"
    values = {
        "DATABASE_URL": environ.get("DATABASE_URL") or f"sqlite:///{var_dir() / 'db.sqlite3'}",
        "REDIS_URL": environ.get("REDIS_URL", ""),
        "CELERY_BROKER_URL": environ.get("CELERY_BROKER_URL", ""),
        "PORT": str(port),
        "SERVICE_ENV": service_env,
    }
    public = environ.get("PUBLIC_BASE_URL")
    if public is None and service_env == "development":
        public = f"http://127.0.0.1:{port}"
    if public is not None:
        values["PUBLIC_BASE_URL"] = public.rstrip("/")
    return values


def record(port: int) -> Path:
    """Write `var/run.env` for a service about to start on `port`."""
    path = record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Written by `make run`: the settings the running service uses. manage.py reads them when its",
        "# environment names no DATABASE_URL, REDIS_URL or CELERY_BROKER_URL of its own (config/runenv.py).",
        *(f"{name}={_quoted(value)}" for name, value in effective(port).items()),
    ]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("\n".join(lines) + "\n")
    return path


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def recorded() -> dict[str, str]:
    path = record_path()
    if not path.exists():
        return {}
    return {k: v or "" for k, v in dotenv_values(path).items() if k in RECORDED}


def server_pid() -> int | None:
    """The pid of the running `make run` supervisor, if one runs."""
    try:
        pid = int(pid_path().read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def adopt(stderr=sys.stderr) -> None:
    """For manage.py: take the recorded settings when the environment names no data setting of its own;
    otherwise say so when they differ from those of the running server."""
    if os.environ.get("MANAGE_USES_RUN_SETTINGS", "1") == "0":
        return
    found = recorded()
    if not found:
        return
    told = [name for name in DATA if name in os.environ]
    if not told:
        for name, value in found.items():
            os.environ.setdefault(name, value)
        return
    pid = server_pid()
    if pid is None:
        return
    ours = os.environ.get("DATABASE_URL") or f"sqlite:///{var_dir() / 'db.sqlite3'}"
    theirs = found.get("DATABASE_URL", "")
    if theirs and ours != theirs:
        print(
            f"manage.py: note: this command uses the database {masked(ours)}, but the server `make run` "
            f"started (pid {pid}) uses {masked(theirs)} (var/run.env); unset DATABASE_URL to use the same.",
            file=stderr,
        )


def masked(url: str) -> str:
    """A database URL without its password."""
    parts = urlsplit(url)
    if parts.password:
        host = parts.hostname or ""
        netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def main() -> int:
    parser = argparse.ArgumentParser(description="Record the settings `make run` starts with.")
    parser.add_argument("action", choices=["record", "show", "url"])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
    args = parser.parse_args()
    if args.action == "record":
        running = server_pid()
        if running is not None:  # its queue, beat lock and run.env are in this var/: it would take our tasks
            port = recorded().get("PORT", "?")
            print(
                f"make run: another `make run` (pid {running}, port {port}) uses {var_dir()}: its file broker's "
                "queue, beat's lock and run.env are there, so each would take the other's tasks. Stop it, or give "
                f"this one a state directory of its own: VAR_DIR=<another directory> make run PORT={args.port}",
                file=sys.stderr,
            )
            return 1
        record(args.port)
        return 0
    found = recorded()
    if args.action == "url":  # where the server make run started is reached from this machine
        print(f"http://127.0.0.1:{found.get('PORT') or args.port}")
        return 0
    for name, value in found.items():
        print(f"{name}={shlex.quote(masked(value) if name in DATA else value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
