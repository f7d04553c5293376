"""N service nodes on one machine, sharing one PostgreSQL, one Redis and the chains the deployment names.

Each node is what one machine of a deployment runs (docs/operations.md): gunicorn, a worker of the default
queue (the only process given the signing keys), a thread-pool worker of the webhook queue, and beat. Every
node runs beat; the one holding the deployment's beat lock sends (config/beat.py), the others stand by. Each
node has its own VAR_DIR (its beat schedule file), as separate machines would.

    DATABASE_URL=postgres://... REDIS_URL=redis://... python tools/cluster.py --nodes 2 --port 8100

starts the nodes against an already migrated database (`manage.py migrate` is the deploy step) and runs until
Ctrl-C; node i's web server listens on port + i - 1. `make soak` (tools/soak.py) drives one with faults.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rehearsal import Processes

ROOT = Path(__file__).resolve().parents[1]
ROLES = ("web", "worker", "webhooks", "beat")


@dataclass
class Node:
    """One node: its processes' commands and environments, started and killed through `processes`."""

    number: int
    port: int
    env: dict[str, str]  # every process but the signing worker
    signer_env: dict[str, str]  # the default-queue worker's: with the signing keys
    var: Path
    processes: Processes
    started: dict[str, float] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def name(self, role: str) -> str:
        return f"node{self.number}-{role}"

    def command(self, role: str) -> list[str]:
        celery = [sys.executable, "-m", "celery", "-A", "config"]
        return {
            "web": [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                "config/gunicorn_conf.py",
                "--bind",
                f"127.0.0.1:{self.port}",
                "config.wsgi:application",
            ],
            "worker": [
                *celery,
                "worker",
                "-Q",
                "celery",
                "-c",
                os.environ.get("CLUSTER_WORKER_CONCURRENCY", "2"),
                "-n",
                f"default{self.number}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
            "webhooks": [
                *celery,
                "worker",
                "-Q",
                "webhooks",
                "-P",
                "threads",
                "-c",
                "8",
                "-n",
                f"webhooks{self.number}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
            "beat": [*celery, "beat", "-s", str(self.var / "celerybeat-schedule"), "-l", "INFO"],
        }[role]

    def start(self, *roles: str) -> None:
        for role in roles or ROLES:
            env = self.signer_env if role == "worker" else self.env
            self.processes.start(self.name(role), self.command(role), {**env, "VAR_DIR": str(self.var)})
            self.started[role] = time.monotonic()

    def kill(self, *roles: str) -> None:
        """SIGKILL to each role's whole process group: the machine lost those processes mid-work."""
        for role in roles or ROLES:
            self.processes.kill(self.name(role))

    def running(self, role: str) -> bool:
        process = self.processes.running.get(self.name(role))
        return process is not None and process.poll() is None


def start_cluster(
    count: int,
    *,
    ports: list[int],
    env: dict[str, str],
    signer_env: dict[str, str],
    work: Path,
    processes: Processes,
) -> list[Node]:
    nodes = []
    for number, port in enumerate(ports[:count], start=1):
        var = work / f"node{number}"
        var.mkdir(parents=True, exist_ok=True)
        node = Node(number, port, env, signer_env, var, processes)
        node.start()
        nodes.append(node)
    return nodes


def _secret(variable: str) -> bool:
    """A signing key, where one is kept, or the remote signer's token (chains/signers.py)."""
    return variable == "SIGNER_REMOTE_TOKEN" or variable.endswith(
        ("_PRIVATE_KEY", "_KEYSTORE_FILE", "_PASSPHRASE_FILE")
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--dir", type=Path, default=ROOT / "var" / "cluster")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        print(
            "cluster: nodes share one database and one Redis: set DATABASE_URL and REDIS_URL", file=sys.stderr
        )
        return 2
    (args.dir / "logs").mkdir(parents=True, exist_ok=True)
    processes = Processes(args.dir / "logs")
    env = {k: v for k, v in os.environ.items() if not _secret(k)}  # the keys go to the signing worker alone
    ports = [args.port + n for n in range(args.nodes)]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        nodes = start_cluster(
            args.nodes, ports=ports, env=env, signer_env=dict(os.environ), work=args.dir, processes=processes
        )
        print(
            "\n".join(f"node {n.number}: {n.url} (logs {args.dir / 'logs'}/{n.name('*')}.log)" for n in nodes)
        )
        while all(n.running(role) for n in nodes for role in ROLES):
            time.sleep(1)
        print("cluster: a process exited; stopping every node (see its log)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        processes.stop_all()


if __name__ == "__main__":
    sys.exit(main())
