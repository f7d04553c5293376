"""`make run`: the web server, the workers and beat as one unit, stopped together.

In development, first the registry's devnets (anvil nodes, with the contracts
and devnet tokens deployed; chains/devnet.py). Then gunicorn (the production
WSGI server, static files by whitenoise), a Celery worker for the default
queue, thread-pool workers for webhook deliveries and beat. SIGINT (Ctrl-C)
or SIGTERM stops every child, and so does any child exiting on its own; the
exit status says which (0 for a requested stop).

Each child runs in a process group of its own, so the terminal's Ctrl-C
reaches the supervisor alone, which stops the children in order: what takes
work in (the web server, beat) first, then the workers (each finishes its
task: a warm shutdown), then the devnets they were talking to. One line per
component says it stopped. A child is sent SIGTERM if the supervisor dies.
Only the default-queue worker is given the signing keys (chains/signers.py).

    python -m config.supervise [--port 8000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from config import runenv

GRACE_SECONDS = 15
GUNICORN_CONFIG = Path(__file__).with_name("gunicorn_conf.py")


def commands(port: int, bin_dir: Path) -> dict[str, list[str]]:
    from django.conf import settings

    celery = [str(bin_dir / "celery"), "-A", "config", "--quiet"]  # no start-up banners: make run prints one
    webhook_workers = {
        # One thread-pool process per core: a process runs Python on one core at a time (the GIL).
        # Deliveries are short and bounded by their deadline, so each thread may hold 4 messages.
        f"webhooks-{n}": [
            *celery,
            "worker",
            "-Q",
            settings.CELERY_WEBHOOK_QUEUE,
            "-n",
            f"webhooks{n}@%h",
            "--pool",
            "threads",
            "--concurrency",
            os.environ.get("WEBHOOK_CONCURRENCY", "16"),
            "--prefetch-multiplier",
            "4",
            "--loglevel",
            "INFO",
        ]
        for n in range(1, int(os.environ.get("WEBHOOK_WORKERS", "2")) + 1)
    }
    return {
        "web": [
            str(bin_dir / "gunicorn"),
            "-c",
            str(GUNICORN_CONFIG),
            "--bind",
            f"127.0.0.1:{port}",
            "config.wsgi:application",
        ],
        "worker": [
            *celery,
            "worker",
            "-Q",
            settings.CELERY_TASK_DEFAULT_QUEUE,
            "-n",
            "default@%h",
            "--concurrency",
            "2",
            "--loglevel",
            "INFO",
        ],
        **webhook_workers,
        "beat": [
            *celery,
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(settings.CELERY_BEAT_SCHEDULE_FILENAME),
        ],
    }


def start_devnets(bin_dir: Path) -> dict[str, subprocess.Popen]:
    """Start the registry's devnets (anvil), deploy on them and load their tokens; {} when there are none."""
    from chains.devnet import (
        ANVIL,
        DevnetError,
        anvil_command,
        devnet_chains,
        port_is_free,
        port_of,
        token_list_path,
        wait_until_up,
    )

    chains = devnet_chains()
    if not chains:
        return {}
    if not ANVIL.exists():
        print(
            "supervise: anvil is not installed (npm is needed: see README); running without devnets",
            flush=True,
        )
        return {}
    busy = [chain for chain in chains if not port_is_free(port_of(chain))]
    if busy:
        raise DevnetError(
            f"{', '.join(c.rpc_url for c in busy)} already in use: stop what listens there, or set "
            "DEVNET_PORTS (or DEVNET=0)"
        )
    nodes = {f"devnet-{chain.chain_id}": spawn(anvil_command(chain)) for chain in chains}
    try:
        for chain in chains:
            wait_until_up(chain)
        manage = [str(bin_dir / "python"), "manage.py"]
        subprocess.run([*manage, "devnet_deploy"], check=True)  # noqa: S603
        subprocess.run([*manage, "load_tokens", str(token_list_path())], check=True)  # noqa: S603
        # The ledger opens at what the fresh devnets' vault and solver hold (reconcile is clean from here).
        subprocess.run([*manage, "reconcile", "--open-devnets"], check=True)  # noqa: S603
    except (DevnetError, subprocess.CalledProcessError):
        stop(nodes)
        raise
    return nodes


def process_environments(*, devnets: bool) -> dict[str, dict[str, str]]:
    """The environment of the default-queue worker (it signs) and of every other process (they never do).

    The signing keys (and where the keystores and their passphrases are, and the remote signer's token) go to
    the worker alone: the web server, beat and the webhook workers run without them. With devnets and no keys of its own, the
    worker signs with the devnets' published test keys.
    """
    from chains.signers import KEY_VARIABLES

    secret = {
        *KEY_VARIABLES.values(),
        "SIGNER_REMOTE_TOKEN",
        *(
            f"{role.upper()}_{what}"
            for role in KEY_VARIABLES
            for what in ("KEYSTORE_FILE", "PASSPHRASE_FILE")
        ),
    }
    others = {k: v for k, v in os.environ.items() if k not in secret}
    worker = dict(os.environ)
    if devnets:
        from chains.devnet import devnet_signer_environment

        for variable, key in devnet_signer_environment().items():
            worker.setdefault(variable, key)
    return {"worker": worker, "other": others}


# Stopped in this order, each tier waiting for the one before: nothing takes new work while the workers
# finish theirs, and the devnets stay up until no worker talks to them.
STOP_TIERS = (("web", "beat"), ("worker", "webhooks-"), ("devnet-",))  # names, or prefixes ending in "-"


def _tier(name: str) -> int:
    return next(
        (
            n
            for n, names in enumerate(STOP_TIERS)
            if any(name == m or (m.endswith("-") and name.startswith(m)) for m in names)
        ),
        0,
    )


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The child gets SIGTERM when the supervisor dies (Linux), even by kill -9: no orphans."""
    os.setsid()  # a process group of its own: the terminal's Ctrl-C is the supervisor's to handle
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def spawn(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, preexec_fn=_die_with_parent)  # noqa: S603


def stop(children: dict[str, subprocess.Popen]) -> None:
    """Stop every child, tier by tier (STOP_TIERS), within GRACE_SECONDS each; one line per child."""
    for tier in range(len(STOP_TIERS)):
        members = {name: child for name, child in children.items() if _tier(name) == tier}
        for child in members.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        for name, child in members.items():
            try:
                code = child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"supervise: {name} did not stop in {GRACE_SECONDS} s; killing it", file=sys.stderr)
                child.kill()
                code = child.wait()
            how = "stopped" if code in (0, -signal.SIGTERM) else f"stopped (exit status {code})"
            print(f"supervise: {name} {how}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # Every process's metrics, summed by /metrics: each role writes under var/metrics/<role>, cleared now.
    metrics_dir = os.environ.setdefault("METRICS_DIR", str(runenv.var_dir() / "metrics"))
    if metrics_dir:  # empty: each process keeps its own samples
        shutil.rmtree(metrics_dir, ignore_errors=True)
    import django

    django.setup()
    stopping: list[int] = []

    def on_signal(signum, _frame):
        stopping.append(signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    bin_dir = Path(sys.executable).parent
    from chains.devnet import DevnetError

    try:
        children = start_devnets(bin_dir)
    except (DevnetError, subprocess.CalledProcessError) as exc:
        print(f"supervise: the devnets did not start: {exc}", file=sys.stderr)
        return 1
    environments = process_environments(devnets=bool(children))
    ready_dir = Path(tempfile.mkdtemp(prefix="ready-", dir=runenv.var_dir()))
    for env in environments.values():
        env["SUPERVISE_READY_DIR"] = str(ready_dir)
    children.update(
        {
            name: spawn(
                cmd, env={**environments["worker" if name == "worker" else "other"], "METRICS_ROLE": name}
            )
            for name, cmd in commands(args.port, bin_dir).items()
        }
    )
    print(f"supervise: started {', '.join(f'{n} (pid {c.pid})' for n, c in children.items())}", flush=True)
    pid_file = runenv.pid_path()
    pid_file.write_text(f"{os.getpid()}\n")
    celery = [name for name in children if name in ("worker", "beat") or name.startswith("webhooks-")]
    if wait_for_service(args.port, children, stopping, ready_dir=ready_dir, expected=len(celery)):
        print(banner(args.port, devnets=[n for n in children if n.startswith("devnet-")]), flush=True)
    shutil.rmtree(ready_dir, ignore_errors=True)
    exited = None
    while not stopping and exited is None:
        time.sleep(0.2)
        exited = next((name for name, child in children.items() if child.poll() is not None), None)
    if exited is not None:
        print(
            f"supervise: {exited} exited with {children[exited].returncode}; stopping the rest",
            file=sys.stderr,
        )
    else:
        print(f"supervise: {signal.Signals(stopping[0]).name} received; stopping", flush=True)
    stop(children)
    pid_file.unlink(missing_ok=True)
    print("supervise: all stopped", flush=True)
    return 1 if exited is not None else 0


def wait_for_service(
    port: int,
    children: dict[str, subprocess.Popen],
    stopping: list[int],
    *,
    ready_dir: Path,
    expected: int,
    timeout: float = 180,
) -> bool:
    """Whether the web server answers on `port` (its liveness probe) and the `expected` Celery processes
    said they are ready (config.celery), before `timeout`, a stop or a child's exit."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    web_up = False
    while time.monotonic() < deadline and not stopping:
        if any(child.poll() is not None for child in children.values()):
            return False
        if not web_up:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    web_up = True
            except (urllib.error.URLError, OSError):
                pass
        if web_up and len(list(ready_dir.iterdir())) >= expected:
            time.sleep(0.5)  # what a ready worker logs right after saying so
            return True
        time.sleep(0.3)
    return False


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def banner(port: int, *, devnets: list[str]) -> str:
    """What to open and type next, once the server listens: the last thing `make run` prints."""
    from django.conf import settings

    base = f"http://127.0.0.1:{port}"
    manage = ".venv/bin/python manage.py"
    lines = [
        "",
        f"The service is up at {base}/  (Ctrl-C stops it all)",
        f"  API docs     {base}/api/docs/",
        f"  Dashboard    {base}/dashboard/   first member: {manage} create_member --org acme "
        "--email you@shop.example --role owner",
        f"  Admin        {base}/admin/       staff: {manage} createsuperuser, then {manage} staff_two_factor "
        "<username>",
        f"  First key    {manage} create_api_key --org acme --name dev --permissions admin",
    ]
    if devnets:
        from chains.registry import chain_get

        nodes = [chain_get(int(name.split("-", 1)[1])) for name in devnets]
        lines.append(
            "  Devnets      "
            + ", ".join(f"{c.name} {c.rpc_urls[0]} (chain {c.chain_id})" for c in nodes if c)
        )
    kept = runenv.recorded()
    where = runenv.masked(kept.get("DATABASE_URL", "")) + (
        f" and {runenv.masked(kept['REDIS_URL'])}" if kept.get("REDIS_URL") else ""
    )
    lines += [
        f"  Payer pages  {settings.PUBLIC_BASE_URL}/pay/...",
        f"  Settings     {_shown(runenv.record_path())}: commands in another terminal use the same ({where})",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
