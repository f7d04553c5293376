"""`make restore-drill`: the machine is lost while orders settle; the service comes back from the last backup.

1. Two devnets (anvil, 1 s blocks) that outlive everything else, their contracts deployed and the ledger
   opened; service A (gunicorn, a signing worker, a webhook worker, beat: tools/cluster.py's node) on
   PostgreSQL database DRILL_DATABASE_A and Redis database 9 (DRILL_REDIS_DBS: A's, B's).
2. DRILL_ORDERS swap orders (devnet A -> devnet B, each to its own recipient) are created, then paid one every
   DRILL_PAY_EVERY seconds. Halfway, while A sweeps and delivers, the backup: `pg_dump --format=custom` of A's
   database. A goes on settling (and signing: sweeps, deliveries) for DRILL_AFTER_DUMP seconds after the last
   payment, then every process of A is killed -9: the machine is gone.
3. The restore, as docs/operations.md says: a new database (DRILL_DATABASE_B) from the dump (`pg_restore`), a
   new Redis database (8, empty: the queued tasks are gone with the machine), the same keys and settings;
   service B started on it.

Exit 0 only if: every order is `executed` on B; each recipient was paid exactly once (one dUSDC transfer to it
on devnet B, the one B's database records as the order's delivery) and each deposit address swept exactly once on devnet A; and `reconcile`
finds no difference on either devnet. The report gives the orders in flight at the dump (by status), what A
signed after the dump, what B found on the chains and adopted, and the time from B's start to the last order
executed. Needs PostgreSQL (pg_dump and pg_restore of the server's version) and Redis.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import requests
from eth_account import Account
from web3 import Web3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import Node
from rehearsal import Processes, Report, free_port, wait_for

ROOT = Path(__file__).resolve().parents[1]
PG = os.environ.get("DRILL_POSTGRES", "postgres://postgres@127.0.0.1:5432")
DATABASE_A = os.environ.get("DRILL_DATABASE_A", "checkout_drill_a")
DATABASE_B = os.environ.get("DRILL_DATABASE_B", "checkout_drill_b")
REDIS_SERVER = os.environ.get("DRILL_REDIS", "redis://127.0.0.1:6379")
REDIS_DBS = [int(n) for n in os.environ.get("DRILL_REDIS_DBS", "9,8").split(",")]  # A's, then B's
ORDERS = int(os.environ.get("DRILL_ORDERS", "16"))
PAY_EVERY = float(os.environ.get("DRILL_PAY_EVERY", "0.5"))
AFTER_DUMP = float(os.environ.get("DRILL_AFTER_DUMP", "2"))
FINAL = {"executed", "refunded", "failure", "expired"}
TRANSFER = "0x" + Web3.keccak(text="Transfer(address,address,uint256)").hex().removeprefix("0x")


def topic(address: str) -> str:
    return "0x" + "00" * 12 + address.lower().removeprefix("0x")


def psql(database: str, sql: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(f"{PG}/{database}", autocommit=True) as connection:
        cursor = connection.execute(sql, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def fresh_database(name: str) -> None:
    psql("postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    psql("postgres", f'CREATE DATABASE "{name}"')


def statuses(database: str, ids: list[str]) -> dict[str, str]:
    import psycopg

    with psycopg.connect(f"{PG}/{database}") as connection:
        rows = connection.execute(
            "SELECT id::text, status FROM orders_order WHERE id::text = ANY(%s)", (ids,)
        ).fetchall()
    return dict(rows)


class Drill:
    def __init__(self, work: Path) -> None:
        self.work, self.report = work, Report()
        self.processes = Processes(work / "logs")
        self.say = self.report.say

    def environment(self, database: str, redis_db: int, var: Path) -> dict[str, str]:
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DJANGO_", "DATABASE_", "REDIS_", "CELERY_", "VAULT_", "SOLVER_", "SIGNER_"))
        }
        return {
            **base,
            "SERVICE_ENV": "development",  # the devnets' published keys are refused in production
            "MANAGE_USES_RUN_SETTINGS": "0",
            "DATABASE_URL": f"{PG}/{database}",
            "REDIS_URL": f"{REDIS_SERVER}/{redis_db}",
            "CELERY_BROKER_URL": f"{REDIS_SERVER}/{redis_db}",
            "DEVNET_PORTS": self.devnet_ports,
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "RECONCILE_INTERVAL_SECONDS": "0",  # the drill reconciles at the end
            "WEB_CONCURRENCY": "1",
            "GUNICORN_ACCESS_LOG": "",
            "VAR_DIR": str(var),
        }

    def manage(self, env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check and done.returncode != 0:
            raise SystemExit(
                f"restore drill: manage.py {' '.join(args)}: {done.stdout[-800:]}{done.stderr[-800:]}"
            )
        return done

    def node(self, name: str, env: dict[str, str], port: int) -> Node:
        from chains.devnet import devnet_signer_environment

        var = Path(env["VAR_DIR"])
        node = Node(1, port, env, {**env, **devnet_signer_environment()}, var, self.processes)
        node.name = lambda role, name=name: f"{name}-{role}"  # type: ignore[method-assign]
        node.start()
        wait_for(
            f"service {name}'s web server",
            lambda: _alive(node.url) or _exited(self.processes, name),
            timeout=120,
        )
        if _exited(self.processes, name):
            raise SystemExit(f"restore drill: a process of service {name} exited (logs in {self.work}/logs)")
        return node

    def run(self) -> int:  # noqa: C901 - the drill's steps in order, one script read top to bottom
        (self.work / "logs").mkdir(parents=True)
        self.devnet_ports = f"{free_port()},{free_port()}"
        var_a, var_b = self.work / "a", self.work / "b"
        var_a.mkdir()
        var_b.mkdir()
        env_a = self.environment(DATABASE_A, REDIS_DBS[0], var_a)
        env_b = self.environment(DATABASE_B, REDIS_DBS[1], var_b)
        fresh_database(DATABASE_A)
        fresh_database(DATABASE_B)
        import redis

        for db in REDIS_DBS:
            redis.Redis.from_url(f"{REDIS_SERVER}/{db}").flushdb()

        self.manage(env_a, "migrate", "--noinput", "-v0")
        os.environ.update(env_a, DJANGO_SETTINGS_MODULE="config.settings")
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from chains.devnet import anvil_command, devnet_chains, example_swap_order, wait_until_up

        chains = devnet_chains()
        for chain in chains:
            self.processes.start(f"devnet-{chain.chain_id}", anvil_command(chain), dict(os.environ))
        for chain in chains:
            wait_until_up(chain)
        self.w3 = {chain.chain_id: Web3(Web3.HTTPProvider(chain.rpc_urls[0])) for chain in chains}
        self.manage(env_a, "devnet_deploy")
        self.manage(env_a, "load_tokens", str(var_a / "devnet-tokens.json"))
        self.manage(env_a, "reconcile", "--open-devnets")
        port_a, port_b = free_port(), free_port()
        a = self.node("a", env_a, port_a)
        self.say(f"devnets {self.devnet_ports}; service A on {a.url} ({DATABASE_A})")

        orders = []
        for n in range(ORDERS):
            body = example_swap_order()
            amount = (n + 1) * 1_000_000
            body |= {"recipientAddress": Account.create().address, "srcAmount": str(amount)}
            body["payload"] = {"expectedDstAmount": str(amount * 99 // 100)}
            answer = requests.post(f"{a.url}/orders", json=body, timeout=30)
            if answer.status_code != 200:
                raise SystemExit(f"restore drill: POST /orders: {answer.status_code} {answer.text[:400]}")
            data = answer.json()["data"]
            orders.append({"id": data["id"], "deposit": data["globalAddress"], "amount": amount, **body})
        ids = [o["id"] for o in orders]

        dump = self.work / "backup.dump"
        dumped: dict[str, object] = {}

        def backup() -> None:
            dumped["at"] = datetime.now(UTC)
            started = time.monotonic()
            dump_command = ["pg_dump", "--format=custom", f"--file={dump}", f"{PG}/{DATABASE_A}"]
            subprocess.run(dump_command, check=True, timeout=300)  # noqa: S603
            dumped["seconds"] = time.monotonic() - started

        src = self.w3[31337]
        token = orders[0]["srcTokenAddress"]
        erc20 = src.eth.contract(address=token, abi=_ERC20_ABI)
        payers = src.eth.accounts[1:9]
        dumper: threading.Thread | None = None
        for n, order in enumerate(orders):
            erc20.functions.transfer(order["deposit"], order["amount"]).transact(
                {"from": payers[n % len(payers)]}
            )
            if n == ORDERS // 2:
                time.sleep(1.5)  # A sees the first half's deposits and starts sweeping and delivering
                dumper = threading.Thread(target=backup)
                dumper.start()
            time.sleep(PAY_EVERY)
        assert dumper is not None
        dumper.join()
        time.sleep(AFTER_DUMP)
        at_kill = Counter(statuses(DATABASE_A, ids).values())
        for role in ("web", "worker", "webhooks", "beat"):
            self.processes.kill(a.name(role))
        self.say(
            f"paid {ORDERS} orders; the backup began {dumped['at']:%H:%M:%S.%f} ({dumped['seconds']:.1f} s); "
            f"A killed -9 {AFTER_DUMP:g} s after the last payment, its orders then: {dict(at_kill)}"
        )
        signed_after = psql(
            DATABASE_A,
            "SELECT key, status FROM chains_outboxtx WHERE signed_at >= %s ORDER BY signed_at",
            (dumped["at"],),
        )

        restore_started = time.monotonic()
        restore_command = ["pg_restore", "--no-owner", f"--dbname={PG}/{DATABASE_B}", str(dump)]
        subprocess.run(restore_command, check=True, timeout=300)  # noqa: S603
        for name in ("devnet-deployments.json", "devnet-tokens.json"):  # the machine's config, not its state
            if (var_a / name).exists():
                shutil.copy(var_a / name, var_b / name)
        in_backup = statuses(DATABASE_B, ids)
        in_flight = Counter(status for status in in_backup.values() if status not in FINAL)
        self.node("b", env_b, port_b)
        b_started = time.monotonic()
        self.say(
            f"restored into {DATABASE_B} and service B started in {b_started - restore_started:.1f} s; "
            f"the backup held {dict(Counter(in_backup.values()))}"
        )
        finished_at: float | None = None
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            now = statuses(DATABASE_B, ids)
            if all(status in FINAL for status in now.values()):
                finished_at = time.monotonic()
                break
            time.sleep(0.5)
        final = statuses(DATABASE_B, ids)
        adopted = psql(DATABASE_B, "SELECT claimed_by FROM chains_adoptedtx ORDER BY chain_id, nonce")
        reconciled = {c: self.manage(env_b, "reconcile", "--chain", str(c), check=False) for c in self.w3}

        dst = self.w3[31338]
        paid_twice, paid_wrong, swept_twice = [], [], []
        for order in orders:
            to_recipient = dst.eth.get_logs(
                {
                    "fromBlock": 0,
                    "toBlock": "latest",
                    "topics": [TRANSFER, None, topic(order["recipientAddress"])],
                }
            )
            recorded = _delivery_hashes(DATABASE_B, order["id"])
            if len(to_recipient) > 1:
                paid_twice.append(order["id"])
            elif (
                len(to_recipient) != 1
                or to_recipient[0]["transactionHash"].to_0x_hex().lower() not in recorded
            ):
                paid_wrong.append(order["id"])
            from_deposit = src.eth.get_logs(
                {"fromBlock": 0, "toBlock": "latest", "topics": [TRANSFER, topic(order["deposit"])]}
            )
            if len(from_deposit) != 1:
                swept_twice.append(order["id"])

        say = self.say
        say("")
        say("=" * 78)
        say(f"{'restore drill: ' + str(ORDERS) + ' orders':<56}{'value':>12}{'must be':>10}")
        say("-" * 78)
        rows = [
            ("orders in flight in the backup (not final)", sum(in_flight.values()), ""),
            *((f"  of them {status}", count, "") for status, count in sorted(in_flight.items())),
            ("transactions A signed after the backup began", len(signed_after), ""),
            ("transactions B found on the chains, not in its database", len(adopted), ""),
            ("  of them taken by the transactions they were", sum(1 for (k,) in adopted if k), ""),
            ("  of them kept, never claimed", sum(1 for (k,) in adopted if not k), 0),
            (
                "B's start -> every order final (s)",
                f"{finished_at - b_started:.1f}" if finished_at else "not within 240",
                "",
            ),
            ("orders executed", f"{sum(s == 'executed' for s in final.values())}/{ORDERS}", "all"),
            ("recipients paid twice", len(paid_twice), 0),
            ("recipients paid other than by the delivery B records", len(paid_wrong), 0),
            ("deposit addresses swept other than once", len(swept_twice), 0),
            *(
                (f"reconcile on chain {c} finds a difference", "no" if r.returncode == 0 else "YES", "no")
                for c, r in reconciled.items()
            ),
        ]
        for what, value, must in rows:
            say(f"  {what:<54}{value!s:>12}{must!s:>10}")
        say("=" * 78)
        self.report.check(sum(in_flight.values()) > 0, "the backup was taken while orders were settling")
        self.report.check(
            len(signed_after) > 0, "A signed transactions after the backup (B had to find them)"
        )
        self.report.check(all(s == "executed" for s in final.values()), "every order executed on B")
        self.report.check(not paid_twice, "no recipient paid twice")
        self.report.check(not paid_wrong, "every recipient paid by the delivery B records for its order")
        self.report.check(not swept_twice, "every deposit swept once")
        self.report.check(
            all(r.returncode == 0 for r in reconciled.values()), "reconcile finds no difference"
        )
        for c, r in reconciled.items():
            if r.returncode != 0:
                say(f"reconcile on chain {c}:\n{r.stdout[-3000:]}{r.stderr[-1500:]}")
        figures = {
            "orders": ORDERS,
            "in_flight_at_backup": sum(in_flight.values()),
            "signed_after_backup": len(signed_after),
            "adopted": len(adopted),
            "seconds_to_final_after_start": round(finished_at - b_started, 1) if finished_at else None,
            "paid_twice": len(paid_twice),
            "reconcile_clean": all(r.returncode == 0 for r in reconciled.values()),
        }
        (self.work / "report.txt").write_text("\n".join(self.report.lines) + "\n")
        print(json.dumps(figures))
        if self.report.failures:
            print(
                f"RESTORE DRILL FAILED: {len(self.report.failures)} check(s) did not hold (logs in {self.work})"
            )
            return 1
        print("RESTORE DRILL PASSED")
        return 0


def _delivery_hashes(database: str, order_id: str) -> set[str]:
    """The transactions B's database records as the order's delivery on devnet B."""
    rows = psql(
        database, "SELECT tx_hash FROM orders_relaytx WHERE order_id = %s AND chain = 31338", (order_id,)
    )
    return {row[0].lower() for row in rows}


def _alive(url: str) -> bool:
    try:
        return requests.get(f"{url}/healthz", timeout=3).status_code == 200
    except requests.RequestException:
        return False


def _exited(processes: Processes, name: str) -> bool:
    return any(
        process.poll() is not None for key, process in processes.running.items() if key.startswith(f"{name}-")
    )


_ERC20_ABI = [
    {
        "name": "transfer",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "amount", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    }
]


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="restore-drill-"))
    drill = Drill(work)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return drill.run()
    finally:
        drill.processes.stop_all()


if __name__ == "__main__":
    sys.exit(main())
