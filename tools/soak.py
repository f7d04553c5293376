"""`make soak`: two service nodes on one PostgreSQL and Redis take 300 payments while things break.

The chain is started once, outside the nodes (an anvil node, 1 s blocks, reached through a primary and a
fallback RPC endpoint); the service runs in production mode, as tools/cluster.py starts its nodes (gunicorn, a
signing worker, a webhook worker and beat on each; one beat sends). Delivery goes through the relay provider's
API, a local stand-in that fails or answers too late on SOAK_FAULT_RATE (10 %) of its calls. Payers pay
SOAK_PAYMENTS (300) orders of mixed types over about SOAK_SECONDS (300): swap, x402_swap and duel in a
stablecoin and in ether, and contract types (an NFT mint, a tournament's entry and funding, custom calls: the
provider's multicaller makes each call in its fill, from tools/relay_standin.py),
created through both nodes as a load balancer would spread them. Meanwhile:

- at 20 % of the run, the node whose beat holds the beat lock loses every process (kill -9: web, worker,
  webhook worker and beat) and gets them back 15 s later; the other node's beat must take the lock over;
- at 50 %, the primary RPC endpoint goes down and comes back 15 s later;
- at 75 %, that node's web server and signing worker are killed -9 again and restarted 10 s later.

A webhook receiver records every delivery. At the end the soak prints a table (orders by final status,
payments delivered twice, stuck orders, webhook events delivered more than once under different ids, 5xx
answers from a node that was not being killed, payment -> executed median/p95/worst, `reconcile`) and exits
0 only if every must-be-zero is zero and reconcile finds no difference. Needs PostgreSQL and Redis
(database SOAK_DATABASE created fresh, Redis database 11 flushed).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from eth_account import Account
from web3 import Web3

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rehearsal
from cluster import Node, start_cluster
from rehearsal import (
    ANVIL,
    NATIVE,
    PRICE,
    Processes,
    Report,
    artifact,
    chain_add,
    contract_payload,
    deploy_targets,
    free_port,
    up,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[1]
CHAIN_ID = 8453
PAYMENTS = int(os.environ.get("SOAK_PAYMENTS", "300"))
SECONDS = float(os.environ.get("SOAK_SECONDS", "300"))
FAULT_RATE = float(os.environ.get("SOAK_FAULT_RATE", "0.1"))
PAYERS = 12
FINAL = {"executed", "refunded", "failure", "expired"}
SWAPS = ("swap", "x402_swap", "duel")
CONTRACT_TYPES = ("custom", "custom_exact_in", "mint_nft", "join_tournament", "fund_tournament")
RELAY_SOLVER = PAYERS + 7  # the relay stand-in's solver: an account no payer uses


def main() -> int:
    rehearsal.DATABASE = os.environ.get("SOAK_DATABASE", "checkout_soak")
    rehearsal.REDIS = os.environ.get("SOAK_REDIS", "redis://127.0.0.1:6379/11")
    work = Path(os.environ.get("SOAK_DIR") or ROOT / "var" / "soak")
    shutil.rmtree(work, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    processes = Processes(work / "logs")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return Soak(work, processes).run()
    finally:
        processes.stop_all()
        print(f"(logs of every process: {work / 'logs'})")


class Receiver:
    """The merchant's webhook endpoint: every delivery's event, delivery id and payment id."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.lock = threading.Lock()
        received, lock = self.received, self.lock

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with lock:
                    received.append(
                        {
                            "event": body.get("event"),
                            "delivery": self.headers.get("X-Service-Delivery-Id"),
                            "payment": (body.get("data") or {}).get("id"),
                        }
                    )
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class Soak:
    def __init__(self, work: Path, processes: Processes) -> None:
        self.work, self.processes, self.report = work, processes, Report()
        self.nodes: list[Node] = []
        self.down: dict[int, bool] = defaultdict(bool)  # node number -> being killed / restarted now
        self.answers: Counter = Counter()  # (node, "5xx while up" | "5xx while down" | "refused") -> count
        self.lock = threading.Lock()

    # --- setup ------------------------------------------------------------------------------------------
    def run(self) -> int:
        database_url, redis_url = rehearsal.fresh_stores()
        self.start_chain()
        self.start_service(database_url, redis_url)
        self.drive()
        return self.verdict(database_url)

    def start_chain(self) -> None:
        node_port = free_port()
        self.processes.start(
            "anvil",
            [
                str(ANVIL),
                "--port",
                str(node_port),
                "--chain-id",
                str(CHAIN_ID),
                "--block-time",
                "1",
                "--accounts",
                str(PAYERS + 8),
                "--silent",
            ],
            dict(os.environ),
        )
        self.node = f"http://127.0.0.1:{node_port}"
        wait_for("the node", lambda: up(self.node))
        self.rpc_ports = {"primary": free_port(), "fallback": free_port()}
        for name in self.rpc_ports:
            self.start_rpc(name)
        w3 = self.w3 = Web3(Web3.HTTPProvider(self.node, request_kwargs={"timeout": 30}))
        faucet = w3.eth.accounts[0]
        self.payers = w3.eth.accounts[1 : PAYERS + 1]
        token = artifact("TestToken")
        receipt = w3.eth.wait_for_transaction_receipt(
            w3.eth.contract(abi=token["abi"], bytecode=token["bytecode"])
            .constructor("USD Coin (soak)", "USDC", 6, faucet)
            .transact({"from": faucet}),
            timeout=60,
        )
        self.usdc = w3.eth.contract(address=receipt.contractAddress, abi=token["abi"])
        self.contracts = deploy_targets(w3, self.usdc.address)
        for holder in (*self.payers, w3.eth.accounts[RELAY_SOLVER]):
            last = self.usdc.functions.mint(holder, 10_000_000 * 10**6).transact({"from": faucet})
        w3.eth.wait_for_transaction_receipt(last, timeout=60)
        self.vault = Account.create()
        w3.eth.wait_for_transaction_receipt(
            w3.eth.send_transaction({"from": faucet, "to": self.vault.address, "value": 100 * 10**18}),
            timeout=60,
        )

    def start_rpc(self, name: str) -> None:
        port = self.rpc_ports[name]
        self.processes.start(
            f"rpc-{name}",
            [sys.executable, "tools/rehearsal_standins.py", "rpc", self.node, str(port)],
            dict(os.environ),
        )
        wait_for(f"the {name} RPC endpoint", lambda: up(f"http://127.0.0.1:{port}"))

    def start_service(self, database_url: str, redis_url: str) -> None:
        work = self.work
        keystore, passphrase = work / "vault.keystore.json", work / "vault.passphrase"
        secret = secrets.token_urlsafe(24)
        keystore.write_text(json.dumps(Account.encrypt(self.vault.key, secret)))
        passphrase.write_text(secret + "\n")
        keystore.chmod(0o600)
        passphrase.chmod(0o600)
        tokens = work / "tokens.json"
        tokens.write_text(
            json.dumps(
                {
                    "name": "Soak",
                    "tokens": [
                        {
                            "chainId": CHAIN_ID,
                            "address": self.usdc.address,
                            "symbol": "USDC",
                            "name": "USD Coin",
                            "decimals": 6,
                            "extensions": {"usdPrice": "1"},
                        },
                        {
                            "chainId": CHAIN_ID,
                            "address": NATIVE,
                            "symbol": "ETH",
                            "name": "Ether",
                            "decimals": 18,
                            "extensions": {"usdPrice": "3000"},
                        },
                    ],
                }
            )
        )
        relay_port, ports, relay_key = free_port(), [free_port(), free_port()], secrets.token_urlsafe(32)
        addresses = work / "relay.json"
        self.processes.start(  # the provider: it signs its webhooks to the first node, as configured for its key
            "relay",
            [
                sys.executable,
                "tools/relay_standin.py",
                "--rpc",
                f"{CHAIN_ID}={self.node}",
                "--port",
                str(relay_port),
                "--addresses",
                str(addresses),
                "--solver-account",
                str(RELAY_SOLVER),
                "--webhook-url",
                f"http://127.0.0.1:{ports[0]}/relay/webhook",
                f"--api-key={relay_key}",  # a key may begin with "-", which argparse takes for an option
                "--fault-rate",
                str(FAULT_RATE),
                "--fault-delay",
                "4",
            ],
            dict(os.environ),
        )
        wait_for(
            "the relay stand-in", lambda: addresses.exists() and addresses.stat().st_size > 0, timeout=90
        )
        relay = json.loads(addresses.read_text())
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DJANGO_", "CHAINS", "DEVNET", "VAULT_", "SOLVER_", "SIGNER_", "DEPLOYER_"))
        }
        self.env = {
            **base,
            "SERVICE_ENV": "production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "ENCRYPTION_KEY": base64.urlsafe_b64encode(os.urandom(32)).decode(),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "CHAINS": "[]",
            "VAULT_ADDRESS": self.vault.address,
            "SIGNER_BACKEND": "keystore",
            "RELAY_PROVIDER": "relay",
            "RELAY_API_URL": f"http://127.0.0.1:{relay_port}",
            "RELAY_API_KEY": relay_key,
            "RELAY_DEPOSITORIES": ",".join(f"{c}:{a}" for c, a in relay["depositories"].items()),
            "QUOTE_PROVIDER": "offline",
            "PROVIDER_TIMEOUT_SECONDS": "3",
            "OUTBOX_POLL_SECONDS": "2",
            "RELAY_POLL_SECONDS": "2",
            "WEBHOOK_ALLOW_LOCALHOST": "1",
            "WEBHOOK_SWEEP_INTERVAL_SECONDS": "5",
            "ORDER_WRITE_RATE_LIMIT_PER_MINUTE": "100000",
            "PLATFORM_RATE_LIMIT_PER_MINUTE": "100000",
            "RECONCILE_INTERVAL_SECONDS": "0",  # the soak runs it once, at the end
            "WEB_CONCURRENCY": "1",
            "WEB_THREADS": "8",
            "GUNICORN_ACCESS_LOG": "",
        }
        signer = {**self.env, "VAULT_KEYSTORE_FILE": str(keystore), "VAULT_PASSPHRASE_FILE": str(passphrase)}
        self.manage("migrate", "--noinput", "-v0")
        self.manage("load_tokens", str(tokens))
        primary, fallback = (f"http://127.0.0.1:{p}" for p in self.rpc_ports.values())
        self.manage(*chain_add(CHAIN_ID, "Base (soak)", primary, fallback))
        created = self.manage("create_api_key", "--org", "soak", "--name", "soak", "--permissions", "admin")
        self.key = created.stdout.strip().splitlines()[-1]
        self.relay = f"http://127.0.0.1:{relay_port}"
        self.nodes = start_cluster(
            2, ports=ports, env=self.env, signer_env=signer, work=self.work, processes=self.processes
        )
        for node in self.nodes:
            wait_for(f"node {node.number}'s web server", lambda node=node: _alive(node.url), timeout=90)
        self.manage("chains", "deploy-factory", str(CHAIN_ID))
        wait_for(
            "`chains check` to pass",
            lambda: self.manage("chains", "check", check=False).returncode == 0,
            timeout=90,
            every=1,
        )
        opened = self.manage(
            "reconcile", "--chain", str(CHAIN_ID), "--adopt", "soak: opening balances", check=False
        )
        if opened.returncode != 0:
            raise SystemExit(f"soak failed: the ledger could not be opened:\n{opened.stdout}{opened.stderr}")
        self.receiver = Receiver()
        hook = self.call("POST", "/api/v1/webhooks", json={"url": self.receiver.url, "events": ["*"]})
        if hook is None or hook.status_code not in (200, 201):
            raise SystemExit(f"soak failed: the webhook endpoint was not created: {hook and hook.text[:300]}")
        self.report.say(
            f"chain {CHAIN_ID} (1 s blocks) behind {primary} (primary) and {fallback}; 2 nodes at "
            f"{', '.join(n.url for n in self.nodes)}; relay stand-in failing {FAULT_RATE:.0%} of calls"
        )

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check and done.returncode != 0:
            raise SystemExit(f"soak failed: manage.py {' '.join(args)}: {done.stderr.strip()[-800:]}")
        return done

    # --- the load balancer --------------------------------------------------------------------------------
    def call(self, method: str, path: str, **kwargs) -> requests.Response | None:
        """One request, to the nodes in turn from a random one, as a load balancer that skips a node that
        refuses connections. A 5xx is counted against the node that answered it."""
        order = secrets.SystemRandom().sample(self.nodes, len(self.nodes))
        headers = {"Authorization": f"Bearer {self.key}"} if path.startswith(("/api/", "/orders")) else {}
        for node in order:
            down = self.down[node.number]
            try:
                answer = requests.request(method, node.url + path, headers=headers, timeout=30, **kwargs)
            except requests.RequestException:
                with self.lock:
                    self.answers[(node.number, "refused" if down else "refused while up")] += 1
                continue
            if answer.status_code >= 500:
                with self.lock:
                    self.answers[
                        (
                            node.number,
                            "5xx while down" if (down or self.down[node.number]) else "5xx while up",
                        )
                    ] += 1
                continue
            return answer
        return None

    # --- the run ------------------------------------------------------------------------------------------
    def drive(self) -> None:
        self.orders: list[dict] = []
        self.faults: list[str] = []
        self.faults_done = False
        self.takeover: float | None = None
        started = time.monotonic()
        threading.Thread(target=self.break_things, args=(started,), daemon=True).start()
        with ThreadPoolExecutor(PAYERS) as pool:
            futures = [
                pool.submit(self.pay_one, n, started + n * SECONDS / PAYMENTS) for n in range(PAYMENTS)
            ]
            for future in futures:
                future.result()
        self.report.say(f"{len(self.orders)} payments sent in {time.monotonic() - started:.0f} s")

    def break_things(self, started: float) -> None:
        try:
            self._break_things(started)
            self.faults_done = True
        except BaseException as exc:  # wait_for's SystemExit too: the table says the schedule did not finish
            self.faults.append(f"the fault schedule stopped: {exc}")

    def _break_things(self, started: float) -> None:
        def at(share: float) -> None:
            time.sleep(max(0.0, started + share * SECONDS - time.monotonic()))

        def note(what: str) -> None:
            self.faults.append(f"{time.monotonic() - started:5.0f} s  {what}")

        at(0.2)
        first = self.beat_holder() or self.nodes[0]  # the node whose beat sends: the takeover is tested too
        other = next(node for node in self.nodes if node is not first)
        self.down[first.number] = True
        first.kill()
        killed = time.monotonic()
        note(f"node {first.number}: web, worker, webhook worker and beat (the beat lock's holder) killed -9")
        wait_for("another beat to take the lock", lambda: self.beat_holder() is other, timeout=60, every=0.2)
        self.takeover = time.monotonic() - killed
        note(f"node {other.number}'s beat took the lock {self.takeover:.1f} s later")
        time.sleep(max(0.0, killed + 15 - time.monotonic()))
        first.start()
        wait_for(f"node {first.number} back", lambda: _alive(first.url), timeout=90)
        self.down[first.number] = False
        note(f"node {first.number}: restarted, serving")
        at(0.5)
        self.processes.kill("rpc-primary")
        note("the primary RPC endpoint stopped")
        time.sleep(15)
        self.start_rpc("primary")
        note("the primary RPC endpoint restarted")
        at(0.75)
        self.down[first.number] = True
        first.kill("web", "worker")
        note(f"node {first.number}: web and signing worker killed -9")
        time.sleep(10)
        first.start("web", "worker")
        wait_for(f"node {first.number} back", lambda: _alive(first.url), timeout=90)
        self.down[first.number] = False
        note(f"node {first.number}: web and signing worker restarted, serving")

    def beat_holder(self) -> Node | None:
        """The node whose beat holds the deployment's beat lock (its value names the beat's process id)."""
        import redis

        value = redis.Redis.from_url(self.env["REDIS_URL"]).get("beat:lock")
        if not value:
            return None
        pid = int(value.decode().split(":")[1])
        for node in self.nodes:
            process = self.processes.running.get(node.name("beat"))
            if process is not None and process.pid == pid:
                return node
        return None

    def pay_one(self, n: int, when: float) -> None:
        time.sleep(max(0.0, when - time.monotonic()))
        payer = self.payers[n % PAYERS]
        kind = n % 10
        if kind < 7:  # a swap type paid in the stablecoin
            token, amount, symbol, decimals, order_type = (
                self.usdc.address,
                (secrets.randbelow(50) + 1) * 10**6,
                "USDC",
                6,
                SWAPS[n % 3],
            )
            payload = {"expectedDstAmount": str(amount * 97 // 100)}
        elif kind < 9:  # in ether
            token, amount, symbol, decimals, order_type = (
                NATIVE,
                (secrets.randbelow(20) + 1) * 10**15,
                "ETH",
                18,
                SWAPS[n % 3],
            )
            payload = {"expectedDstAmount": str(amount * 97 // 100)}
        else:  # a contract call, made by the provider's multicaller in its fill
            token, amount, symbol, decimals = self.usdc.address, PRICE + 10**6, "USDC", 6
            order_type = CONTRACT_TYPES[(n // 10) % len(CONTRACT_TYPES)]
            payload = contract_payload(order_type, self.contracts)
        shape = {
            "chainId": CHAIN_ID,
            "address": token,
            "symbol": symbol,
            "name": symbol,
            "decimals": decimals,
            "metadata": {},
        }
        body = {
            "type": order_type,
            "recipientAddress": Account.create().address,
            "srcChain": CHAIN_ID,
            "dstChain": CHAIN_ID,
            "srcTokenAddress": token,
            "dstTokenAddress": token,
            "srcAmount": str(amount),
            "payload": payload,
            "metadata": {"srcToken": shape, "dstToken": shape}
            | ({"nft": {"name": "Soak pass"}} if order_type == "mint_nft" else {}),
        }
        answer = self.call("POST", "/orders", json=body)
        if answer is None or answer.status_code != 200:
            raise SystemExit(f"soak failed: POST /orders ({order_type}): {answer and answer.text[:300]}")
        order = answer.json()["data"]
        if token == NATIVE:
            tx = self.w3.eth.send_transaction({"from": payer, "to": order["globalAddress"], "value": amount})
        else:
            tx = self.usdc.functions.transfer(order["globalAddress"], amount).transact({"from": payer})
        self.w3.eth.wait_for_transaction_receipt(tx, timeout=120)
        with self.lock:
            self.orders.append(
                {
                    "id": order["id"],
                    "type": order_type,
                    "token": token,
                    "recipient": body["recipientAddress"],
                    "paid": time.time(),
                }
            )

    # --- the verdict ----------------------------------------------------------------------------------------
    def verdict(self, database_url: str) -> int:
        import psycopg

        ids = [o["id"] for o in self.orders]

        def states() -> dict[str, tuple[str, object]]:
            with psycopg.connect(database_url) as connection:
                rows = connection.execute(
                    "SELECT id::text, status, filled_at FROM orders_order WHERE id::text = ANY(%s)", (ids,)
                ).fetchall()
            return {row[0]: (row[1], row[2]) for row in rows}

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not all(s in FINAL for s, _ in states().values()):
            time.sleep(2)
        final = states()
        time.sleep(float(os.environ.get("SOAK_WEBHOOK_GRACE", "20")))  # the last deliveries
        report, say = self.report, self.report.say

        by_status = Counter(status for status, _ in final.values())
        stuck = [i for i in ids if final.get(i, ("?",))[0] not in FINAL]
        contract_orders = [o for o in self.orders if o["type"] in CONTRACT_TYPES]
        contracts_executed = sum(final.get(o["id"], ("?",))[0] == "executed" for o in contract_orders)
        stats = requests.get(f"{self.relay}/__stats", timeout=10).json()
        fills = stats["fills"]
        twice = sum(len(fills.get(o["recipient"].lower(), [])) > 1 for o in self.orders)
        received = list(self.receiver.received)
        deliveries = defaultdict(set)
        for each in received:
            deliveries[(each["event"], each["payment"])].add(each["delivery"])
        duplicated = sum(len(ids_) > 1 for ids_ in deliveries.values())
        told = {payment for event, payment in deliveries if event in ("payment.completed", "payment.failed")}
        untold = [
            i for i in ids if final.get(i, ("?",))[0] in ("executed", "refunded", "failure") and i not in told
        ]
        durations = sorted(
            final[o["id"]][1].timestamp() - o["paid"]
            for o in self.orders
            if final.get(o["id"], ("", None))[0] == "executed" and final[o["id"]][1] is not None
        )
        fivexx_up = sum(v for (node, what), v in self.answers.items() if what == "5xx while up")
        reconciled = self.manage("reconcile", "--chain", str(CHAIN_ID), check=False)

        for fault in self.faults:
            say(f"  fault: {fault}")
        say("")
        say("=" * 78)
        say(f"{'soak: 2 nodes, ' + str(len(self.orders)) + ' payments':<56}{'value':>12}{'must be':>10}")
        say("-" * 78)
        for status, count in sorted(by_status.items()):
            say(f"  orders {status:<47}{count:>12}")
        rows = [
            (
                "contract-type orders executed (the provider's calls)",
                f"{contracts_executed}/{len(contract_orders)}",
                "all",
            ),
            ("payments delivered twice", twice, 0),
            ("stuck orders (not final after 5 min)", len(stuck), 0),
            ("webhook events delivered under >1 ids", duplicated, 0),
            ("final orders the merchant was never told of", len(untold), 0),
            ("5xx from a node that was not being killed", fivexx_up, 0),
            (
                "requests a node refused while it was down (failed over)",
                sum(v for (n, w), v in self.answers.items() if w == "refused"),
                "",
            ),
            (
                "relay stand-in calls / injected faults",
                f"{stats['calls'].get('calls', 0)}/{stats['calls'].get('503', 0) + stats['calls'].get('late', 0)}",
                "",
            ),
        ]
        if durations:
            rows += [
                ("payment -> executed median (s)", f"{statistics.median(durations):.1f}", ""),
                (
                    "payment -> executed p95 (s)",
                    f"{durations[max(0, int(len(durations) * 0.95) - 1)]:.1f}",
                    "",
                ),
                ("payment -> executed worst (s)", f"{durations[-1]:.1f}", ""),
            ]
        if self.takeover is not None:
            rows.append(
                ("beat lock taken over after its holder was killed (s)", f"{self.takeover:.1f}", "<= 13.3")
            )
        rows.append(("reconcile finds a difference", "no" if reconciled.returncode == 0 else "YES", "no"))
        for what, value, must in rows:
            say(f"  {what:<54}{value!s:>12}{must!s:>10}")
        say("=" * 78)
        report.check(self.faults_done, "every fault was injected and every node came back")
        # The lock lapses at most its time to live (10 s) after the holder's last renewal, and a standby asks
        # every third of that: the other beat holds it within 13.3 s of the kill.
        report.check(
            self.takeover is not None and self.takeover <= 10 * 4 / 3,
            "the other beat took the lock within its time to live and one standby tick",
        )
        report.check(twice == 0, "no payment delivered twice")
        report.check(not stuck, f"no stuck order{': ' + ', '.join(stuck[:5]) if stuck else ''}")
        report.check(duplicated == 0, "no webhook event delivered under two ids")
        report.check(
            not untold,
            f"the merchant was told of every final order{': ' + ', '.join(untold[:5]) if untold else ''}",
        )
        report.check(fivexx_up == 0, "no 5xx from a node that was not being killed")
        report.check(
            by_status.get("executed", 0) - contracts_executed == len(self.orders) - len(contract_orders),
            "every swap-type order executed",
        )
        report.check(contracts_executed == len(contract_orders), "every contract-type order executed")
        report.check(reconciled.returncode == 0, "reconcile finds no difference")
        if reconciled.returncode != 0:
            say(reconciled.stdout[-3000:])
        (self.work / "report.txt").write_text("\n".join(report.lines) + "\n")
        if report.failures:
            print(f"SOAK FAILED: {len(report.failures)} check(s) did not hold")
            return 1
        print("SOAK PASSED")
        return 0


def _alive(url: str) -> bool:
    try:
        return requests.get(f"{url}/chains", timeout=5).status_code == 200
    except requests.RequestException:
        return False


if __name__ == "__main__":
    sys.exit(main())
