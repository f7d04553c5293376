"""`make image-test`: the container image run as a deployment runs it, and an order paid through it.

From the image (`make image`, localhost/checkout:latest; built first if missing), with buildah's chroot
isolation and the host's network (it needs no cgroups): the `migrate` role on a fresh PostgreSQL database,
the devnets' contracts deployed and their tokens loaded by the image's own code, then the `web`, `worker`
(given the devnets' published test keys, as `make run` gives them) and `beat` roles on PostgreSQL and Redis.
The devnets (anvil) run on this machine. An order is created through the image's web server, paid on
Devnet A by the image's `manage pay_order`, and must reach `executed`; the web's `/metrics` must show it,
counted by the worker (a shared metrics directory). Prints the image's size and the timings; exit 0 only
if all of that held. Uses database IMAGE_TEST_DATABASE (checkout_image_test, created afresh) and Redis
database 10.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rehearsal import free_port

ROOT = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("IMAGE", "localhost/checkout:latest")
PG = os.environ.get("IMAGE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432")
DATABASE = os.environ.get("IMAGE_TEST_DATABASE", "checkout_image_test")
REDIS = os.environ.get("IMAGE_TEST_REDIS", "redis://127.0.0.1:6379/10")


def say(text: str) -> None:
    print(f"image-test: {text}", flush=True)


class Containers:
    """Each role in a buildah working container of the image, run in its own session (stopped as a group)."""

    def __init__(self, env: dict[str, str], metrics: Path, logs: Path) -> None:
        self.env, self.metrics, self.logs = env, metrics, logs
        self.running: dict[str, tuple[str, subprocess.Popen]] = {}

    def _new(self, name: str) -> str:
        return subprocess.run(
            ["buildah", "from", "--name", f"checkout-{name}-{secrets.token_hex(3)}", IMAGE],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    def _run_args(self, container: str, env: dict[str, str]) -> list[str]:
        flags = [
            "--isolation",
            "chroot",
            "--network",
            "host",
            "-v",
            f"{self.metrics}:/var/lib/checkout/metrics",
        ]
        for key, value in {**self.env, **env}.items():
            flags += ["-e", f"{key}={value}"]
        return ["buildah", "run", *flags, container, "--"]

    def once(self, name: str, command: list[str], env: dict[str, str] | None = None) -> str:
        container = self._new(name)
        try:
            done = subprocess.run(
                [*self._run_args(container, env or {}), *command],
                capture_output=True,
                text=True,
                timeout=600,
            )
        finally:
            subprocess.run(["buildah", "rm", container], capture_output=True)
        if done.returncode != 0:
            raise SystemExit(f"image-test: {name} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start(self, role: str, env: dict[str, str] | None = None) -> None:
        container = self._new(role)
        log = (self.logs / f"{role}.log").open("w")
        process = subprocess.Popen(
            [*self._run_args(container, {**(env or {}), "METRICS_ROLE": role}), "deploy/entrypoint.sh", role],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.running[role] = (container, process)

    def alive(self, role: str) -> bool:
        return self.running[role][1].poll() is None

    def stop_all(self) -> None:
        for _container, process in self.running.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for container, process in self.running.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            subprocess.run(["buildah", "rm", container], capture_output=True)


def until(what: str, check, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = check()
        except requests.RequestException:
            found = None
        if found:
            return found
        time.sleep(0.5)
    raise SystemExit(f"image-test: not within {timeout:.0f} s: {what}")


def main() -> int:
    if shutil.which("buildah") is None:
        print("image-test: needs buildah (Debian: apt-get install buildah)", file=sys.stderr)
        return 2
    if subprocess.run(["buildah", "inspect", "--type", "image", IMAGE], capture_output=True).returncode != 0:
        say(f"{IMAGE} is not built: make image")
        subprocess.run(["make", "image", f"IMAGE={IMAGE}"], cwd=ROOT, check=True)
    size = subprocess.run(
        ["buildah", "images", "--format", "{{.Size}}", IMAGE], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["psql", PG + "/postgres", "-qc", f"DROP DATABASE IF EXISTS {DATABASE}"], check=True)
    subprocess.run(["psql", PG + "/postgres", "-qc", f"CREATE DATABASE {DATABASE}"], check=True)
    subprocess.run(["redis-cli", "-u", REDIS, "FLUSHDB"], check=True, capture_output=True)

    port, devnet_ports = free_port(), f"{free_port()},{free_port()}"
    env = {
        "SERVICE_ENV": "development",  # the devnets' published keys are refused in production
        "DATABASE_URL": f"{PG}/{DATABASE}",
        "REDIS_URL": REDIS,
        "CELERY_BROKER_URL": REDIS,
        "DEVNET_PORTS": devnet_ports,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "MANAGE_USES_RUN_SETTINGS": "0",
    }
    work = Path(tempfile.mkdtemp(prefix="image-test-"))
    metrics = work / "metrics"
    metrics.mkdir(mode=0o777)
    metrics.chmod(0o777)  # the image's user (uid 10001) writes there
    containers = Containers(env, metrics, work)
    anvils: list[subprocess.Popen] = []
    started = time.monotonic()
    try:
        containers.once("migrate", ["deploy/entrypoint.sh", "migrate"])
        say(f"migrate: done in {time.monotonic() - started:.1f} s")

        os.environ.update(env, DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(work / "host"))
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from chains.devnet import (
            anvil_command,
            devnet_chains,
            devnet_signer_environment,
            example_swap_order,
            wait_until_up,
        )

        for chain in devnet_chains():
            anvils.append(
                subprocess.Popen(anvil_command(chain), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
            wait_until_up(chain)
        containers.once(
            "devnets",
            [
                "sh",
                "-c",
                'python3 manage.py devnet_deploy && python3 manage.py load_tokens "$VAR_DIR/devnet-tokens.json"'
                " && python3 manage.py reconcile --open-devnets",
            ],
        )
        say("devnets: contracts deployed and tokens loaded by the image")

        containers.start("web")
        containers.start("worker", devnet_signer_environment())
        containers.start("beat")
        base = f"http://127.0.0.1:{port}"

        def ready():
            for role in ("web", "worker", "beat"):
                if not containers.alive(role):
                    raise SystemExit(f"image-test: the {role} role exited (see {work}/{role}.log)")
            return requests.get(f"{base}/readyz", timeout=2).ok

        until("the web role answers /readyz", ready, 120)
        say(f"web, worker and beat up {time.monotonic() - started:.1f} s after the start")

        body = example_swap_order()
        created = requests.post(f"{base}/orders", json=body, timeout=10)
        if created.status_code != 200:
            raise SystemExit(f"image-test: POST /orders: {created.status_code} {created.text[:500]}")
        order_id = created.json()["data"]["id"]
        paid_at = time.monotonic()
        tx_hash = containers.once("pay", ["deploy/entrypoint.sh", "manage", "pay_order", order_id]).strip()
        say(f"order {order_id} paid on Devnet A ({tx_hash[:12]}…)")

        def executed():
            for role in ("web", "worker", "beat"):
                if not containers.alive(role):
                    raise SystemExit(f"image-test: the {role} role exited (see {work}/{role}.log)")
            order = requests.get(f"{base}/orders/{order_id}", timeout=5).json()["data"]["order"]
            if order["status"] in ("failure", "refunded", "expired"):
                raise SystemExit(
                    f"image-test: the order ended {order['status']}: {order.get('errorDetails')}"
                )
            return order["status"] == "executed"

        until("the order is executed", executed, 180)
        settled = time.monotonic() - paid_at
        exposition = requests.get(f"{base}/metrics", timeout=5).text
        counted = [
            line
            for line in exposition.splitlines()
            if line.startswith("checkout_order_transitions_total") and 'to_status="executed"' in line
        ]
        if not counted:
            raise SystemExit("image-test: /metrics does not show the executed order")
        for role in ("web", "worker", "beat"):
            if not containers.alive(role):
                raise SystemExit(f"image-test: the {role} role exited (see {work}/{role}.log)")
        say(f"executed {settled:.1f} s after the payment was sent; /metrics: {counted[0]}")
        say(f"image {IMAGE}: {size}; all held (logs in {work})")
        print(json.dumps({"image": IMAGE, "size": size, "settled_seconds": round(settled, 1)}))
        return 0
    finally:
        containers.stop_all()
        for anvil in anvils:
            anvil.terminate()
            anvil.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
