"""`make rehearsal`: the service run as a merchant runs it for real money, on two chains it did not start.

1. Two chains the service does not start: anvil nodes (chain ids 8453 and 42161, 2 s blocks, not devnets),
   each reached through two RPC endpoints (a primary and its fallback; killing the primary is a node going
   down), a stablecoin deployed on each by its own deployer, payers funded; on each the contracts orders call
   (an ERC-721 sold for USDC, a tournament, and a contract that refuses every call).
2. The relay provider between them: tools/relay_standin.py as a process (the suite's stand-in, written from the
   provider's documentation: `POST /quote/v2` with `txs`, its depository on each chain, fills from its own
   inventory on the other chain, calls made by its multicaller, refunds to `refundTo`, signed webhooks to the
   service's `/relay/webhook`).
3. The service in production mode (SERVICE_ENV=production): gunicorn, a worker, a chain worker (scans,
   signing, receipts: `CELERY_CHAIN_QUEUE`), beat, PostgreSQL and Redis; the vault's and the solver's keys in
   encrypted keystores, their passphrases in files, given to the chain worker only; no CHAINS seed and no devnet: each chain is added with `manage.py chains add` (2
   confirmations) and its deposit factory deployed with `manage.py chains deploy-factory`, the provider's
   depositories pinned (RELAY_DEPOSITORIES) and given the vault's standing allowance (`manage.py relay allow`),
   and `manage.py chains check` passes.
4. The service's solver holds 300 USDC on each chain, set as an inventory (`manage.py inventory set`: low
   mark 160, orders up to 50 fronted, refilled from the vault's USDC on the other chain through the provider);
   the vault keeps a float of 300 USDC on each chain, so it pays the provider as soon as a sweep is out;
   the call router is deployed on 42161 only (`manage.py relay deploy-router`), so contract orders calling
   there are made from the inventory and those calling on 8453 through the provider's multicaller.
5. Orders of all eight types, created first and then paid together, in the same blocks: ORDERS swap-type
   orders of 10 USDC both ways between the chains (delivered from the inventory), LARGE of 60 USDC (too large
   to front: through the provider), a contract wallet's native payment, one order of each contract type
   each way between the chains, and one of each whose call reverts on 42161; the origin's primary RPC endpoint is
   killed halfway through the payments. The inventories fall below their low mark and are refilled.

Exit 0 only if everything held: every swap and contract order `executed` (the NFT owned by its recipient,
the tournament joined and funded, the custom calls' effect in its prize pool), every reverting one
refunded, the USDC of payers, vault, the service's solver, depositories, the provider's solver,
multicallers, recipients and contracts moved exactly as the orders and the provider's record say, both
chains healthy and `reconcile` clean on each. The report gives payment -> executed median and worst per type
and way (from the inventory, through the relay provider). Needs PostgreSQL and Redis (DATABASE_URL's server,
REHEARSAL_DATABASE created fresh; REDIS_URL's server, database 13 flushed).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import requests
from eth_account import Account
from web3 import Web3

ROOT = Path(__file__).resolve().parents[1]
ANVIL = ROOT / "tools" / "node_modules" / ".bin" / "anvil"
ARTIFACTS = ROOT / "chains" / "contracts" / "artifacts"
NATIVE = "0x" + "00" * 20
CHAINS = {8453: "Base (rehearsal)", 42161: "Arbitrum One (rehearsal)"}
ORIGIN, DESTINATION = 8453, 42161  # contract orders pay on the origin and call on the destination
SOLVER = 8  # the relay stand-in's solver: anvil's account 8 on each chain (tools/relay_standin.py)
AMOUNT = 10 * 10**6  # each swap-type order: 10 USDC, delivered from the solver's inventory
LARGE, LARGE_AMOUNT = 4, 60 * 10**6  # and four larger than the inventory fronts: through the relay provider
# The solver's USDC on each chain: enough for a burst's deliveries from it, each chain's worth of the 40 orders
# (about 150 USDC), delivered on first sight within limits of the same size; the burst takes it below its low
# mark, and it is refilled.
STOCK, LOW_MARK, MAX_FRONTED = 300 * 10**6, 160 * 10**6, 50 * 10**6
VAULT_FLOAT = 300 * 10**6  # the vault's own USDC on each chain (orders/vault_ahead.py)
PRICE, PAID = 5 * 10**6, 6 * 10**6  # each contract order's price on the destination, and what its payer pays
SWAPS = ("swap", "x402_swap", "duel")
CONTRACT_TYPES = ("custom", "custom_exact_in", "mint_nft", "join_tournament", "fund_tournament")
ORDERS = int(os.environ.get("REHEARSAL_ORDERS", "20"))
PG_SERVER = os.environ.get("REHEARSAL_PG", "postgres://postgres@127.0.0.1:5432")
DATABASE = os.environ.get("REHEARSAL_DATABASE", "checkout_rehearsal")
REDIS = os.environ.get("REHEARSAL_REDIS", "redis://127.0.0.1:6379/13")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def artifact(name: str) -> dict:
    return json.loads((ARTIFACTS / f"{name}.json").read_text())


def router_address() -> str:
    """Where `manage.py relay deploy-router` puts the call router (orders/router.py): CREATE2 through the
    deterministic deployment proxy, the same address on every chain."""
    init = bytes.fromhex(artifact("CallRouter")["bytecode"].removeprefix("0x"))
    proxy = bytes.fromhex("4e59b44847b379578588920cA78FbF26c0B4956C")
    salt = Web3.keccak(b"checkout.CallRouter.v1")
    return Web3.to_checksum_address(Web3.keccak(b"\xff" + proxy + salt + Web3.keccak(init))[12:])


class Processes:
    def __init__(self, logs: Path) -> None:
        self.logs, self.running = logs, {}

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("a")  # a restarted process adds to its log
        process = subprocess.Popen(  # noqa: S603
            command,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.running[name] = process
        return process

    def kill(self, name: str) -> None:
        process = self.running.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop_all(self) -> None:
        for process in self.running.values():
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for process in self.running.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        self.running.clear()


def wait_for(what: str, predicate, timeout: float = 60.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise SystemExit(f"rehearsal failed: {what} did not happen within {timeout:g} s")


def up(url: str) -> bool:
    try:
        requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}, timeout=2)
    except requests.RequestException:
        return False
    return True


def fresh_stores() -> tuple[str, str]:
    import psycopg
    import redis

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{DATABASE}"')
    redis.Redis.from_url(REDIS).flushdb()
    return f"{PG_SERVER}/{DATABASE}", REDIS


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.failures: list[str] = []

    def say(self, line: str) -> None:
        print(line, flush=True)
        self.lines.append(line)

    def check(self, ok: bool, what: str) -> None:
        self.say(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            self.failures.append(what)


def main() -> int:
    report = Report()
    work = Path(os.environ.get("REHEARSAL_DIR") or ROOT / "var" / "rehearsal")
    shutil.rmtree(work, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    processes = Processes(work / "logs")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the processes it started stop too
    try:
        return _rehearse(report, work, processes)
    finally:
        processes.stop_all()
        print(f"(logs of every process: {work / 'logs'})")


@dataclass
class Chain:
    """One chain the service did not start: an anvil node behind a primary and a fallback RPC endpoint."""

    chain_id: int
    name: str
    node: str
    primary: str
    fallback: str
    w3: Web3
    usdc: object = None
    contracts: dict = field(default_factory=dict)


def _start_chain(processes: Processes, chain_id: int, name: str) -> Chain:
    node_port, primary_port, fallback_port = free_port(), free_port(), free_port()
    processes.start(
        f"anvil-{chain_id}",
        [str(ANVIL), "--port", str(node_port), "--chain-id", str(chain_id), "--block-time", "2", "--silent"],
        dict(os.environ),
    )
    node = f"http://127.0.0.1:{node_port}"
    wait_for(f"the node of chain {chain_id}", lambda: up(node))
    for role, port in (("primary", primary_port), ("fallback", fallback_port)):
        processes.start(
            f"rpc-{role}-{chain_id}",
            [sys.executable, "tools/rehearsal_standins.py", "rpc", node, str(port)],
            dict(os.environ),
        )
    primary, fallback = f"http://127.0.0.1:{primary_port}", f"http://127.0.0.1:{fallback_port}"
    wait_for(f"the RPC endpoints of chain {chain_id}", lambda: up(primary) and up(fallback))
    return Chain(
        chain_id, name, node, primary, fallback, Web3(Web3.HTTPProvider(node, request_kwargs={"timeout": 30}))
    )


def _deploy(w3: Web3, name: str, *args):
    compiled = artifact(name)
    contract = w3.eth.contract(abi=compiled["abi"], bytecode=compiled["bytecode"])
    receipt = w3.eth.wait_for_transaction_receipt(
        contract.constructor(*args).transact({"from": w3.eth.accounts[0]}), timeout=60
    )
    return w3.eth.contract(address=receipt.contractAddress, abi=compiled["abi"])


def _rehearse(report: Report, work: Path, processes: Processes) -> int:  # noqa: C901 - one scripted walk, read top to bottom
    database_url, redis_url = fresh_stores()

    # --- 1. two chains, each with its stablecoin, payers, and the contracts orders call ------------------
    chains = {chain_id: _start_chain(processes, chain_id, name) for chain_id, name in CHAINS.items()}
    vault, solver = Account.create(), Account.create()  # the service's: its vault, and its solver's inventory
    for chain in chains.values():
        w3 = chain.w3
        chain.usdc = _deploy(w3, "TestToken", "USD Coin (rehearsal)", "USDC", 6, w3.eth.accounts[0])
        for holder in (*w3.eth.accounts[1:6], w3.eth.accounts[SOLVER]):
            last = chain.usdc.functions.mint(holder, 1_000_000 * 10**6).transact({"from": w3.eth.accounts[0]})
        last = chain.usdc.functions.mint(solver.address, STOCK).transact({"from": w3.eth.accounts[0]})
        # The vault's float, as an operator keeps one: it pays the provider as soon as a sweep is out, not a
        # block later once the sweep is in one (orders/vault_ahead.py). Adopted with the opening balances.
        last = chain.usdc.functions.mint(vault.address, VAULT_FLOAT).transact({"from": w3.eth.accounts[0]})
        w3.eth.wait_for_transaction_receipt(last, timeout=60)
        for role in (vault, solver):
            w3.eth.wait_for_transaction_receipt(
                w3.eth.send_transaction(
                    {"from": w3.eth.accounts[0], "to": role.address, "value": 50 * 10**18}
                ),
                timeout=60,
            )
        report.say(
            f"chain {chain.chain_id}: node {chain.node}, RPC endpoints {chain.primary} (primary) and "
            f"{chain.fallback}; USDC {chain.usdc.address}"
        )
    for chain in chains.values():
        chain.contracts = deploy_targets(chain.w3, chain.usdc.address)
    keys = {}
    for role, account in (("vault", vault), ("solver", solver)):
        keystore, passphrase = work / f"{role}.keystore.json", work / f"{role}.passphrase"
        secret = secrets.token_urlsafe(24)
        keystore.write_text(json.dumps(Account.encrypt(account.key, secret)))
        passphrase.write_text(secret + "\n")
        keystore.chmod(0o600)
        passphrase.chmod(0o600)
        keys |= {
            f"{role.upper()}_KEYSTORE_FILE": str(keystore),
            f"{role.upper()}_PASSPHRASE_FILE": str(passphrase),
        }
    tokens = work / "tokens.json"
    listed = []
    for chain in chains.values():
        listed += [
            {
                "chainId": chain.chain_id,
                "address": chain.usdc.address,
                "symbol": "USDC",
                "name": "USD Coin (rehearsal)",
                "decimals": 6,
                "extensions": {"usdPrice": "1"},
            },
            {
                "chainId": chain.chain_id,
                "address": NATIVE,
                "symbol": "ETH",
                "name": "Ether",
                "decimals": 18,
                "extensions": {"usdPrice": "3000"},
            },
        ]
    tokens.write_text(json.dumps({"name": "Rehearsal", "tokens": listed}))

    # --- 2. the relay provider between them, and the service in production mode ---------------------------
    relay_port, web_port = free_port(), free_port()
    web = f"http://127.0.0.1:{web_port}"
    relay_key, addresses = secrets.token_urlsafe(32), work / "relay.json"
    processes.start(
        "relay",
        [
            sys.executable,
            "tools/relay_standin.py",
            *(arg for chain in chains.values() for arg in ("--rpc", f"{chain.chain_id}={chain.node}")),
            "--port",
            str(relay_port),
            "--addresses",
            str(addresses),
            "--webhook-url",
            f"{web}/relay/webhook",
            f"--api-key={relay_key}",  # a key may begin with "-", which argparse takes for an option
        ],
        dict(os.environ),
    )
    wait_for("the relay stand-in", lambda: addresses.exists() and addresses.stat().st_size > 0, timeout=90)
    relay = json.loads(addresses.read_text())
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "CHAINS", "DEVNET", "VAULT_", "SOLVER_", "SIGNER_", "DEPLOYER_"))
    }
    env = {
        **base,
        "SERVICE_ENV": "production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "ENCRYPTION_KEY": __import__("base64").urlsafe_b64encode(os.urandom(32)).decode(),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "CHAINS": "[]",
        "VAULT_ADDRESS": vault.address,
        "SOLVER_ADDRESS": solver.address,
        "SIGNER_BACKEND": "keystore",
        "RELAY_PROVIDER": "relay",
        "RELAY_API_URL": f"http://127.0.0.1:{relay_port}",
        "RELAY_API_KEY": relay_key,
        "RELAY_DEPOSITORIES": ",".join(f"{c}:{a}" for c, a in relay["depositories"].items()),
        "RELAY_FAST_FILL": "true",  # within the exposure limits set below (orders/fast_fills.py)
        "QUOTE_PROVIDER": "offline",
        "VAR_DIR": str(work),
        "CELERY_CHAIN_QUEUE": "chain",  # scans, signing and receipts on a worker of their own
        "PROVIDER_MAX_RETRIES": "0",
        "WEB_CONCURRENCY": "2",
        "GUNICORN_ACCESS_LOG": "",
    }
    signer = {**env, **keys}

    def manage(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check and done.returncode != 0:
            raise SystemExit(f"rehearsal failed: manage.py {' '.join(args)}: {done.stderr.strip()[-500:]}")
        return done

    manage("migrate", "--noinput", "-v0")
    manage("load_tokens", str(tokens))
    for chain in chains.values():
        added = manage(*chain_add(chain.chain_id, chain.name, chain.primary, chain.fallback))
        report.say(added.stdout.strip())
    # The vault's standing allowance for the provider's depository, given up front as an operator would.
    for chain in chains.values():
        report.say(manage("relay", "allow", str(chain.chain_id), chain.usdc.address).stdout.strip())
    for chain in chains.values():  # the solver's USDC on each chain, refilled from the vault's on the other
        other = next(c for c in chains.values() if c is not chain)
        stocked = manage(
            "inventory",
            "set",
            str(chain.chain_id),
            chain.usdc.address,
            "--low",
            str(LOW_MARK),
            "--target",
            str(STOCK),
            "--max-order",
            str(MAX_FRONTED),
            "--max-outstanding",
            str(STOCK),
            "--refill-from",
            f"{other.chain_id}:{other.usdc.address}",
        )
        report.say(stocked.stdout.strip())
        limited = manage(  # what is delivered against before a payment in USDC here is confirmed
            "inventory",
            "exposure",
            str(chain.chain_id),
            chain.usdc.address,
            "--max-payment",  # the inventory fronts up to MAX_FRONTED; the provider fast-fills the larger ones
            str(2 * LARGE_AMOUNT),
            "--max-per-payer",
            str(STOCK),
            "--max-outstanding",
            str(STOCK),
        )
        report.say(limited.stdout.strip())
    for name, queue, worker_env, processes_ in (
        ("worker", "celery", env, "4"),
        ("chain-worker", "chain", signer, "8"),
    ):
        processes.start(  # the keys only where signing happens: the chain worker
            name,
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                queue,
                "-c",
                processes_,
                "-n",
                f"rehearsal-{queue}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
            worker_env,
        )
    processes.start(
        "beat",
        [sys.executable, "-m", "celery", "-A", "config", "beat", "-s", str(work / "beat-schedule")],
        env,
    )
    processes.start(
        "web",
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            "config/gunicorn_conf.py",
            "--bind",
            f"127.0.0.1:{web_port}",
            "config.wsgi:application",
        ],
        env,
    )
    wait_for("the web server", lambda: _get(f"{web}/chains") is not None)
    report.check(
        "PRIVATE_KEY" not in json.dumps(env) and not any(path in json.dumps(env) for path in keys.values()),
        "no key, keystore or passphrase in the environment of the web server and beat",
    )
    for chain in chains.values():
        deployed_factory = manage("chains", "deploy-factory", str(chain.chain_id))
        report.say(deployed_factory.stdout.strip())
    again = manage("chains", "deploy-factory", str(ORIGIN))
    report.check("nothing sent" in again.stdout, "deploy-factory run twice deploys once")
    # The call router on the destination only: its contract orders from the inventory, the origin's through
    # the provider. Its deployment asks the solver's allowance for it, which the orders wait for.
    report.say(manage("relay", "deploy-router", str(DESTINATION)).stdout.strip())
    wait_for(
        "the solver's allowance for the router",
        lambda: _query(
            database_url,
            "SELECT 1 FROM chains_outboxtx WHERE key LIKE 'inventory:router-allowance:%' AND status = 'mined'",
        ),
        timeout=60,
        every=0.5,
    )
    checked = wait_for(
        "`chains check` to pass",
        lambda: (lambda d: d if d.returncode == 0 else None)(manage("chains", "check", check=False)),
        timeout=90,
        every=1,
    )
    report.say("manage.py chains check:\n" + checked.stdout.rstrip())
    for chain in chains.values():
        opened = manage(
            "reconcile", "--chain", str(chain.chain_id), "--adopt", "rehearsal: opening balances", check=False
        )
        if opened.returncode != 0:
            raise SystemExit(
                f"rehearsal failed: the ledger could not be opened:\n{opened.stdout}{opened.stderr}"
            )

    # --- 3. orders of every type, created, then paid together in the same blocks ---------------------------
    def order(order_type: str, src: Chain, dst: Chain, token_of, amount: int, payload: dict) -> dict:
        def shape(chain: Chain) -> dict:
            address = token_of(chain)
            symbol, decimals = ("ETH", 18) if address == NATIVE else ("USDC", 6)
            return {
                "chainId": chain.chain_id,
                "address": address,
                "symbol": symbol,
                "name": symbol,
                "decimals": decimals,
                "metadata": {},
            }

        body = {
            "type": order_type,
            "recipientAddress": Account.create().address,
            "srcChain": src.chain_id,
            "dstChain": dst.chain_id,
            "srcTokenAddress": token_of(src),
            "dstTokenAddress": token_of(dst),
            "srcAmount": str(amount),
            "payload": payload,
            "metadata": {"srcToken": shape(src), "dstToken": shape(dst)},
        }
        if order_type == "mint_nft":
            body["metadata"]["nft"] = {"name": "Rehearsal pass"}
        answer = requests.post(f"{web}/orders", json=body, timeout=30)
        if answer.status_code != 200:
            raise SystemExit(f"rehearsal failed: POST /orders ({order_type}): {answer.text[:300]}")
        data = answer.json()["data"]
        return data | {
            "type": order_type,
            "recipient": body["recipientAddress"],
            "src": src.chain_id,
            "dst": dst.chain_id,
            "amount": amount,
            "token": token_of(src),
        }

    def usdc(chain: Chain) -> str:
        return chain.usdc.address

    origin, destination = chains[ORIGIN], chains[DESTINATION]
    created = []
    for n in range(ORDERS + LARGE):  # swap types both ways between the chains; the last above MAX_FRONTED
        src, dst = (origin, destination) if n % 2 == 0 else (destination, origin)
        amount = AMOUNT if n < ORDERS else LARGE_AMOUNT
        payload = {"expectedDstAmount": str(amount * 97 // 100)}
        created.append(order(SWAPS[n % 3], src, dst, usdc, amount, payload) | {"kind": "swap"})
    created.append(
        order(
            "swap",
            origin,
            destination,
            lambda c: NATIVE,
            10**16,
            {"expectedDstAmount": str(10**16 * 97 // 100)},
        )
        | {"kind": "native"}
    )
    # Every contract type each way: on 42161 (the router's chain) from the inventory, with one of each whose call
    # reverts (never sent: refunded from the vault); on 8453 by the provider's multicaller (its reverting calls,
    # refunded by the provider, are the suite's and the soak's).
    for src, dst, kinds in (
        (origin, destination, ("contract", "reverting")),
        (destination, origin, ("contract",)),
    ):
        for kind in kinds:
            for order_type in CONTRACT_TYPES:
                payload = contract_payload(order_type, dst.contracts, reverting=kind == "reverting")
                created.append(order(order_type, src, dst, usdc, PAID, payload) | {"kind": kind})

    # The native payment comes from a contract wallet (an internal CALL), owned by the deployer.
    wallet_owner = origin.w3.eth.accounts[0]
    wallet = _deploy(origin.w3, "ContractWallet")
    origin.w3.eth.wait_for_transaction_receipt(
        origin.w3.eth.send_transaction({"from": wallet_owner, "to": wallet.address, "value": 10**18}),
        timeout=60,
    )
    before = _balances(chains, created, relay, vault.address, solver.address)
    cursor = {"scanned_to": -1}
    stop = threading.Event()
    threading.Thread(target=_watch_cursor, args=(database_url, cursor, stop), daemon=True).start()
    sent, killed_at = {}, None
    for n, each in enumerate(created):
        if n == len(created) // 2:  # the primary RPC endpoint of the origin chain goes down mid-run
            watcher_at = cursor["scanned_to"]
            processes.kill(f"rpc-primary-{ORIGIN}")
            killed_at = time.monotonic()
            report.say(
                f"killed chain {ORIGIN}'s primary RPC endpoint after {n} payments (watcher at block {watcher_at})"
            )
        src = chains[each["src"]]
        payer = src.w3.eth.accounts[1 + n % 5]
        each["payer"] = payer
        if each["kind"] == "native":
            each["payer"] = wallet.address
            sent[each["id"]] = (
                src,
                wallet.functions.pay([each["globalAddress"]], each["amount"]).transact(
                    {"from": wallet_owner}
                ),
            )
        else:
            sent[each["id"]] = (
                src,
                src.usdc.functions.transfer(each["globalAddress"], each["amount"]).transact({"from": payer}),
            )
    paid_at = _receipts(sent)
    blocks = sorted({block for _, block in paid_at.values()})
    report.say(
        f"{len(created)} orders paid in blocks {blocks[0]}..{blocks[-1]} ({len(blocks)} blocks on two chains)"
    )
    if killed_at is not None:
        resumed = wait_for(
            "the watcher to read new blocks after the primary endpoint was killed",
            lambda: cursor["scanned_to"] > watcher_at + 1 and time.monotonic(),
            timeout=120,
            every=0.1,
        )
        report.say(
            f"the watcher read new blocks {resumed - killed_at:.1f} s after the primary RPC endpoint was killed"
        )

    def status(order_id: str) -> str:
        body = _get(f"{web}/orders/{order_id}")
        return body["data"]["order"]["status"] if body else "?"

    try:
        wait_for(
            "every order to end",
            lambda: all(status(o["id"]) in ("executed", "refunded", "failure") for o in created),
            timeout=400,
            every=1,
        )
    except SystemExit:
        _diagnose(database_url, work / "logs", [o["id"] for o in created])
        raise
    # No refill open for two of beat's refill runs (RELAY_POLL_SECONDS, 5 s): a stock that fell below its low
    # mark as the last deliveries were mined has had its refill asked for, and followed to its end.
    quiet: dict[str, float | None] = {"since": None}

    def refills_done() -> bool:
        open_now = _query(
            database_url, "SELECT 1 FROM orders_inventoryrefill WHERE status IN ('depositing', 'pending')"
        )
        if open_now:
            quiet["since"] = None
            return False
        quiet["since"] = quiet["since"] or time.monotonic()
        return time.monotonic() - quiet["since"] >= 11

    wait_for("the inventories' refills to end", refills_done, timeout=180, every=1)
    time.sleep(6)  # the last refunds' and sweeps' blocks: balances are read once everything is mined
    stop.set()
    fronted = {  # what the solver delivered or paid into a call (a call that would revert was never sent)
        i: int(a)
        for i, a in _query(
            database_url,
            "SELECT f.order_id::text, f.amount FROM orders_inventoryfront f "
            "JOIN chains_outboxtx t ON t.id = f.tx_id WHERE t.status = 'mined'",
        )
    }
    refills = _query(
        database_url, "SELECT inventory_id, status, amount FROM orders_inventoryrefill ORDER BY id"
    )
    report.say(
        f"{len(fronted)} orders delivered from the solver's inventory; refills: "
        + (", ".join(f"{status} {int(amount) / 10**6:g} USDC" for _, status, amount in refills) or "none")
    )
    states = {o["id"]: _get(f"{web}/orders/{o['id']}")["data"]["order"] for o in created}
    for kind, expected in (
        ("swap", "executed"),
        ("native", "executed"),
        ("contract", "executed"),
        ("reverting", "refunded"),
    ):
        mine = [o for o in created if o["kind"] == kind]
        ended = Counter(states[o["id"]]["status"] for o in mine)
        report.check(
            ended == Counter({expected: len(mine)}), f"{kind} orders: {dict(ended)} (every one {expected})"
        )

    # --- 4. every balance, to the unit ---------------------------------------------------------------------
    relay_after = json.loads(requests.get(f"http://127.0.0.1:{relay_port}/__stats", timeout=10).text)
    after = _balances(chains, created, relay, vault.address, solver.address)
    expected = _expected(chains, created, states, relay_after, fronted, solver.address)
    for holder in sorted(after):  # every holder, those that must not have moved too
        actual, change = after[holder] - before[holder], expected.get(holder, 0)
        report.check(actual == change, f"{holder}: {actual:+d} (expected {change:+d})")
    for each in created:
        if each["kind"] != "contract":
            continue
        dst = chains[each["dst"]].contracts
        way = "from the inventory" if each["id"] in fronted else "through the relay"
        if each["type"] == "mint_nft":
            report.check(
                dst["nft"].functions.balanceOf(each["recipient"]).call() == 1,
                f"mint_nft ({way}): the recipient owns the NFT",
            )
        if each["type"] == "join_tournament":
            report.check(
                dst["tournament"].functions.joined(each["recipient"]).call(),
                f"join_tournament ({way}): the recipient joined",
            )
    for chain in chains.values():
        report.check(
            chain.contracts["tournament"].functions.prizePool().call()
            == expected[f"tournament on {chain.chain_id}"],
            f"the tournament's prize pool on {chain.chain_id} holds the entry, the funding and both custom calls, "
            "to the unit",
        )

    # --- 5. speed, health and the books ---------------------------------------------------------------------
    offset = time.time() - time.monotonic()
    by_kind: dict[str, list[float]] = {}
    for each in created:
        filled = states[each["id"]].get("filledAt")
        if states[each["id"]]["status"] != "executed" or not filled:
            continue
        took = filled / 1000 - offset - paid_at[each["id"]][0]
        way = "from inventory" if each["id"] in fronted else "through the relay"
        asset = ", ETH" if each["kind"] == "native" else ""
        by_kind.setdefault(f"{each['type']} ({way}{asset})", []).append(took)
        group = "contract types" if each["kind"] == "contract" else "swap types"
        by_kind.setdefault(f"= {group} {way}", []).append(took)
    report.say("payment (its receipt) -> executed, per type and way (2 s blocks, 2 confirmations):")
    for label, durations in sorted(by_kind.items(), key=lambda item: (item[0].startswith("="), item[0])):
        report.say(
            f"  {label:<42} {len(durations):>3} orders  median {statistics.median(durations):5.1f} s  "
            f"worst {max(durations):5.1f} s"
        )
    _speed_by_path(report, database_url, chains, created, states, paid_at, fronted, offset)

    # --- 6. orders paid one at a time, then a payment reorganised away after its delivery ------------------
    singles, single_paid = [], {}
    for n, (order_type, src, dst, amount, payload) in enumerate(_singles(origin, destination)):
        each = order(order_type, src, dst, usdc, amount, payload) | {"kind": "single"}
        payer = src.w3.eth.accounts[1 + n % 5]
        tx = src.usdc.functions.transfer(each["globalAddress"], amount).transact({"from": payer})
        single_paid |= _receipts({each["id"]: (src, tx)})
        wait_for(
            f"order {n + 1} paid alone to end",
            lambda each=each: status(each["id"]) in ("executed", "refunded", "failure"),
            timeout=90,
            every=0.1,
        )
        singles.append(each)
    single_states = {o["id"]: _get(f"{web}/orders/{o['id']}")["data"]["order"] for o in singles}
    report.check(
        all(single_states[o["id"]]["status"] == "executed" for o in singles),
        f"{len(singles)} orders paid one at a time: every one executed",
    )
    single_fronted = {
        i: int(a)
        for i, a in _query(
            database_url,
            "SELECT f.order_id::text, f.amount FROM orders_inventoryfront f WHERE f.order_id::text = ANY(%s)",
            ([o["id"] for o in singles],),
        )
    }
    _speed_by_path(
        report,
        database_url,
        chains,
        [o | {"kind": "contract" if o["type"] in CONTRACT_TYPES else "swap"} for o in singles],
        single_states,
        single_paid,
        single_fronted,
        offset,
        label="orders paid one at a time",
    )
    _reorg_after_front(report, database_url, origin, destination, order, usdc, status, web, manage)
    final = manage("chains", "check", check=False)
    report.say(f"manage.py chains check (chain {ORIGIN}'s primary endpoint down):\n" + final.stdout.rstrip())
    report.check(final.returncode == 0, "both chains stay healthy, the origin on its fallback endpoint")
    for chain in chains.values():
        reconciled = manage("reconcile", "--chain", str(chain.chain_id), check=False)
        report.say(reconciled.stdout.rstrip())
        report.check(reconciled.returncode == 0, f"reconcile finds no difference on chain {chain.chain_id}")
    report.say(f"the provider's signed webhooks, by the service's answer: {relay_after['webhooks']}")
    report.check(
        set(relay_after["webhooks"]) <= {"200", "400"}, "every webhook the provider signed was verified"
    )
    (work / "report.txt").write_text("\n".join(report.lines) + "\n")
    if report.failures:
        print(f"REHEARSAL FAILED: {len(report.failures)} check(s) did not hold")
        return 1
    print("REHEARSAL PASSED")
    return 0


def chain_add(chain_id: int, name: str, primary: str, fallback: str) -> list[str]:
    """`manage.py chains add` as the tools run it: two RPC endpoints, 2 confirmations (the solver may deliver
    at 1, the payment in its block, within the exposure limits), scanned every half second (a quarter of the
    2 s blocks)."""
    return [
        "chains",
        "add",
        str(chain_id),
        "--name",
        name,
        "--rpc-url",
        primary,
        "--rpc-url",
        fallback,
        "--confirmations",
        "2",
        "--front-confirmations",
        "1",
        "--poll-interval",
        "0.5",
        "--max-lag-blocks",
        "5",
        "--vault-gas-threshold",
        str(10**18),
    ]


def contract_payload(order_type: str, contracts: dict, *, reverting: bool = False) -> dict:
    """The payload of a contract order calling `contracts` (`nft`, `tournament`, `reverts`) on the destination;
    `reverting` aims it at the contract that refuses every call, so the provider's fill reverts and the payer
    is refunded."""
    nft = contracts["reverts" if reverting else "nft"].address
    tournament = contracts["reverts" if reverting else "tournament"].address
    fund = contracts["tournament"].encode_abi("fund", [PRICE])
    return {
        "custom": {"data": fund, "to": tournament, "spenderAddress": tournament, "amount": str(PRICE)},
        "custom_exact_in": {
            "amount": str(PRICE),
            "expectedDstAmount": str(PRICE),
            "functionAbi": json.dumps([f for f in artifact("Tournament")["abi"] if f.get("name") == "fund"]),
            "functionName": "fund",
            "functionArgs": ["{{amount}}"],
            "to": tournament,
            "spenderAddress": tournament,
        },
        "mint_nft": {
            "contractAddress": nft,
            "tokenId": None,
            "contractType": "erc721",
            "nftPrice": str(PRICE),
        },
        "join_tournament": {"contractAddress": tournament, "entryPrice": str(PRICE)},
        "fund_tournament": {"contractAddress": tournament, "fundAmount": str(PRICE)},
    }[order_type]


def deploy_targets(w3: Web3, token: str) -> dict:
    """The contracts orders call, deployed by the chain's deployer: an ERC-721 sold for `token`, a tournament
    paid in it, and a contract that refuses every call."""
    return {
        "nft": _deploy(w3, "PricedNFT721", token, PRICE),
        "tournament": _deploy(w3, "Tournament", token, PRICE),
        "reverts": _deploy(w3, "AlwaysReverts"),
    }


def _holders(chains: dict, created: list[dict], relay: dict) -> dict[str, tuple]:
    """Every address whose USDC (or ether, for the native order's payer and recipient) a payment moves."""
    holders = {}
    for chain in chains.values():
        c = str(chain.chain_id)
        for name, address in (
            ("vault", None),
            ("service's solver", None),
            ("depository", relay["depositories"][c]),
            ("provider's solver", relay["solvers"][c]),
            ("multicaller", relay["multicallers"][c]),
        ):
            holders[f"{name} on {c}"] = (chain, "usdc", address)
        for n in range(1, 6):
            holders[f"payer {n} on {c}"] = (chain, "usdc", chain.w3.eth.accounts[n])
    for each in created:
        token = "eth" if each["kind"] == "native" else "usdc"
        holders[f"recipient of {each['type']} {each['id'][:8]}"] = (
            chains[each["dst"]],
            token,
            each["recipient"],
        )
    for chain in chains.values():
        c, contracts = chain.chain_id, chain.contracts
        holders[f"tournament on {c}"] = (chain, "usdc", contracts["tournament"].address)
        holders[f"nft contract on {c}"] = (chain, "usdc", contracts["nft"].address)
        holders[f"call router on {c}"] = (chain, "usdc", router_address())
    return holders


def _balances(chains: dict, created: list[dict], relay: dict, vault: str, solver: str) -> dict[str, int]:
    out = {}
    for name, (chain, asset, address) in _holders(chains, created, relay).items():
        address = address or (solver if name.startswith("service's solver") else vault)
        native = asset == "eth"
        out[name] = (
            chain.w3.eth.get_balance(address) if native else chain.usdc.functions.balanceOf(address).call()
        )
    return out


def _expected(
    chains: dict, created: list[dict], states: dict, relay: dict, fronted: dict, solver: str
) -> dict[str, int]:
    """What each holder's balance must have moved by: from the orders and the provider's own record of the
    requests it was paid for (deposited), filled and refunded."""
    expected: Counter = Counter()
    requests_ = [r for r in relay["requests"].values() if r["deposit_tx"]]
    by_recipient = {r["recipient"].lower(): r for r in requests_ if r["recipient"].lower() != solver.lower()}
    for r in requests_:
        if r["native"]:
            continue
        o, d = str(r["origin"]), str(r["destination"])
        expected[f"depository on {o}"] += r["amount"]
        expected[f"vault on {o}"] -= r["amount"]
        if r["status"] == "success":
            expected[f"provider's solver on {d}"] -= r["amount"]
            if r["recipient"].lower() == solver.lower():  # a refill of the service's inventory
                expected[f"service's solver on {d}"] += r["amount"]
        elif r["status"] == "refund":
            expected[f"depository on {o}"] -= r["amount"]
            expected[f"vault on {o}"] += r["amount"]
    for n, each in enumerate(created):
        state = states[each["id"]]["status"]
        request = by_recipient.get(each["recipient"].lower())
        if each["kind"] == "native":
            expected[f"recipient of {each['type']} {each['id'][:8]}"] += request["amount"] if request else 0
            continue
        payer = f"payer {1 + n % 5} on {each['src']}"
        expected[payer] -= each["amount"]
        expected[f"vault on {each['src']}"] += each["amount"]
        if state == "refunded":
            expected[payer] += each["amount"]
            expected[f"vault on {each['src']}"] -= each["amount"]
        elif each["id"] in fronted:  # delivered by the service's solver, or its call paid, from its inventory
            where = "nft contract" if each["type"] == "mint_nft" else "tournament"
            to = f"{where} on {each['dst']}" if each["kind"] == "contract" else None
            expected[to or f"recipient of {each['type']} {each['id'][:8]}"] += fronted[each["id"]]
            expected[f"service's solver on {each['dst']}"] -= fronted[each["id"]]
        elif each["kind"] == "swap" and request:
            expected[f"recipient of {each['type']} {each['id'][:8]}"] += request["amount"]
        elif each["kind"] == "contract" and request:  # what the provider brought, all of it spent by the call
            where = "nft contract" if each["type"] == "mint_nft" else "tournament"
            expected[f"{where} on {each['dst']}"] += request["amount"]
    return expected


def _receipts(sent: dict) -> dict[str, tuple[float, int]]:
    """When each payment's receipt was first seen (the rehearsal's clock) and its block."""
    seen: dict[str, tuple[float, int]] = {}
    deadline = time.monotonic() + 120
    while len(seen) < len(sent) and time.monotonic() < deadline:
        for order_id, (chain, tx) in sent.items():
            if order_id in seen:
                continue
            receipt = _receipt(chain.w3, tx)
            if receipt is None:
                continue
            if receipt["status"] != 1:
                raise SystemExit(f"rehearsal failed: the payment of order {order_id} reverted")
            seen[order_id] = (time.monotonic(), receipt["blockNumber"])
        time.sleep(0.1)
    if len(seen) < len(sent):
        raise SystemExit("rehearsal failed: payments were not mined within 120 s")
    return seen


def _spread(values: list[float]) -> str:
    """median, p90 and worst of `values`, in seconds."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, max(0, round(0.9 * len(ordered)) - 1))]
    return f"median {statistics.median(ordered):5.1f} s  p90 {p90:5.1f} s  worst {ordered[-1]:5.1f} s"


def _speed_by_path(
    report, database_url, chains, created, states, paid_at, fronted, offset, *, label="the burst"
) -> None:
    """Per path (inventory or provider, swap or contract types): payment receipt -> delivery mined (the
    delivery's block against the payment's, by the chains' block times) and -> executed; the stages of the
    median order of each path; for the burst, the exposure on first sight at its peak and the fast fills."""
    fronts = {
        order_id: (int(chain), int(block or 0), int(payment_block or 0), created, broadcast)
        for order_id, chain, block, payment_block, created, broadcast in _query(
            database_url,
            "SELECT f.order_id::text, t.chain_id, t.block_number, f.payment_block, "
            "EXTRACT(EPOCH FROM f.created_at), EXTRACT(EPOCH FROM t.broadcast_at) "
            "FROM orders_inventoryfront f JOIN chains_outboxtx t ON t.id = f.tx_id WHERE t.status = 'mined'",
        )
    }
    fills = {
        order_id: (int(chain), tx_hash)
        for order_id, chain, tx_hash in _query(
            database_url,
            "SELECT order_id::text, chain, tx_hash FROM orders_relaytx WHERE status = 'success' ORDER BY id",
        )
    }
    recorded = {
        order_id: float(at)
        for order_id, at in _query(
            database_url,
            "SELECT d.order_id::text, MIN(EXTRACT(EPOCH FROM d.created_at)) FROM orders_deposittx d GROUP BY 1",
        )
    }
    stamp: dict[tuple[int, int], int] = {}

    def timestamp(chain_id: int, block: int) -> int:
        if (chain_id, block) not in stamp:
            stamp[(chain_id, block)] = int(chains[chain_id].w3.eth.get_block(block)["timestamp"])
        return stamp[(chain_id, block)]

    paths: dict[str, dict[str, list]] = {}
    for each in created:
        state = states[each["id"]]
        if state["status"] != "executed" or not state.get("filledAt") or each["kind"] == "reverting":
            continue
        way = "inventory" if each["id"] in fronted else "provider"
        group = "contract types" if each["kind"] == "contract" else "swap types"
        path = paths.setdefault(f"{way} {group}", {"mined": [], "executed": [], "orders": []})
        received, paid_block = paid_at[each["id"]]
        executed = state["filledAt"] / 1000 - offset - received
        path["executed"].append(executed)
        path["orders"].append((executed, each["id"]))
        paid_ts = timestamp(each["src"], paid_block)
        if each["id"] in fronts:
            chain_id, block = fronts[each["id"]][:2]
        elif each["id"] in fills:
            chain_id, tx_hash = fills[each["id"]]
            block = chains[chain_id].w3.eth.get_transaction_receipt(tx_hash)["blockNumber"]
        else:
            continue
        path["mined"].append(float(timestamp(chain_id, block) - paid_ts))
    report.say(
        f"per path, for {label} (delivery mined: the delivery's block time less the payment's; executed: from "
        "the payment's receipt):"
    )
    for name, figures in sorted(paths.items()):
        report.say(f"  {name:<24} {len(figures['executed']):>3} orders")
        if figures["mined"]:
            report.say(f"    -> delivery mined  {_spread(figures['mined'])}")
        report.say(f"    -> executed        {_spread(figures['executed'])}")
        ranked = sorted(figures["orders"])
        median_id = ranked[len(ranked) // 2][1]
        received = paid_at[median_id][0] + offset
        stages = []
        if median_id in fronts:
            _, _, payment_block, created_at, broadcast_at = fronts[median_id]
            if payment_block:
                stages.append(f"seen and fronted {float(created_at) - received:+.1f} s")
            if broadcast_at is not None:
                stages.append(f"delivery broadcast {float(broadcast_at) - received:+.1f} s")
        if median_id in recorded:
            stages.append(f"deposit confirmed {recorded[median_id] - received:+.1f} s")
        stages.append(f"executed {ranked[len(ranked) // 2][0]:+.1f} s")
        report.say(f"    median order's stages: {', '.join(stages)}")
    if label != "the burst":
        return
    exposure = _query(
        database_url,
        "SELECT EXTRACT(EPOCH FROM created_at), EXTRACT(EPOCH FROM covered_at), payment_amount "
        "FROM orders_inventoryfront WHERE payment_block IS NOT NULL",
    )
    events = sorted(
        [(float(start), int(amount)) for start, _, amount in exposure]
        + [(float(end), -int(amount)) for _, end, amount in exposure if end is not None]
    )
    peak = running = 0
    for _, change in events:
        running += change
        peak = max(peak, running)
    report.say(
        f"delivered on first sight: {len(exposure)} orders; exposure in flight at its peak {peak / 10**6:g} USDC"
    )
    fast = _query(
        database_url,
        "SELECT accepted, settled_at IS NOT NULL, lost_at IS NOT NULL FROM orders_fastfill",
    )
    report.say(
        f"fast-filled by the relay provider: {sum(1 for a, _, _ in fast if a)} of {len(fast)} asked; holds "
        f"released {sum(1 for _, s, _ in fast if s)}, lost {sum(1 for _, _, lost in fast if lost)}"
    )


def _singles(origin, destination) -> list[tuple]:
    """The orders paid one at a time: swaps from the inventory and through the provider both ways, and a
    contract order each way (from the inventory on the router's chain, through the provider on the other)."""
    swap = [
        ("swap", src, dst, amount, {"expectedDstAmount": str(amount * 97 // 100)})
        for amount in (AMOUNT, AMOUNT, LARGE_AMOUNT)
        for src, dst in ((origin, destination), (destination, origin))
    ]
    calls = [
        ("fund_tournament", src, dst, PAID, contract_payload("fund_tournament", dst.contracts))
        for src, dst in ((origin, destination), (destination, origin))
    ]
    return swap + calls


def _reorg_after_front(report, database_url, origin, destination, order, usdc, status, web, manage) -> None:
    """A payment delivered against on first sight, then reorganised away (anvil_reorg) before its
    confirmations: the order stays executed and says so, the loss is booked once, an incident opens; staff
    resolve it. The origin chain holds its blocks while the delivery is made, so the payment is in one block
    only, the one the reorg replaces."""
    each = order("swap", origin, destination, usdc, AMOUNT, {"expectedDstAmount": str(AMOUNT * 97 // 100)})
    w3 = origin.w3
    w3.provider.make_request("evm_setIntervalMining", [0])
    try:
        tx = origin.usdc.functions.transfer(each["globalAddress"], AMOUNT).transact(
            {"from": w3.eth.accounts[1]}
        )
        w3.provider.make_request("evm_mine", [])
        paid_block = w3.eth.get_transaction_receipt(tx)["blockNumber"]
        wait_for("the order delivered on first sight", lambda: status(each["id"]) == "executed", timeout=60)
        w3.provider.make_request("anvil_reorg", [w3.eth.block_number - paid_block + 1, []])
    finally:
        w3.provider.make_request("evm_setIntervalMining", [2])
    report.say(
        f"the payment of order {each['id'][:8]} reorganised away after its delivery (block {paid_block})"
    )
    lost = wait_for(
        "the front found lost",
        lambda: (
            _query(
                database_url,
                "SELECT lost_at IS NOT NULL FROM orders_inventoryfront WHERE order_id::text = %s",
                (each["id"],),
            )
            == [(True,)]
        ),
        timeout=120,
        every=1,
    )
    body = _get(f"{web}/orders/{each['id']}") or {}
    shown = (body.get("data") or {}).get("order") or {}
    losses = _query(
        database_url,
        "SELECT key FROM ledger_posting WHERE kind = 'front-loss' AND key = %s",
        (f"front-loss:{each['id']}",),
    )
    incidents = _query(
        database_url,
        "SELECT id FROM chains_incident WHERE kind = 'front_lost' AND subject = %s",
        (f"order:{each['id']}",),
    )
    report.check(
        bool(lost)
        and shown.get("status") == "executed"
        and str(shown.get("errorDetails") or "").startswith("PAYMENT_REVERSED")
        and len(losses) == 1
        and len(incidents) == 1,
        "the payment reorganised away: the order stays executed and says PAYMENT_REVERSED, the loss booked once, "
        "one incident",
    )
    for (incident_id,) in incidents:
        manage(
            "shell",
            "-c",
            f"from chains.incidents import incidents_resolve; incidents_resolve(incident_ids=[{incident_id}], actor='rehearsal')",
        )


def _query(database_url: str, sql: str, params: tuple | None = None) -> list[tuple]:
    """The rows `sql` reads; `params` fill its `%s` (without them, a `%` in the SQL is itself)."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        return connection.execute(sql, params).fetchall()


def _receipt(w3: Web3, tx):
    try:
        return w3.eth.get_transaction_receipt(tx)
    except Exception:  # not mined yet
        return None


def _watch_cursor(database_url: str, cursor: dict, stop: threading.Event) -> None:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        while not stop.is_set():
            row = connection.execute(
                "SELECT scanned_to FROM chains_chaincursor WHERE chain_id = %s", (ORIGIN,)
            ).fetchone()
            if row:
                cursor["scanned_to"] = row[0]
            time.sleep(0.1)


def _diagnose(database_url: str, logs: Path, order_ids: list[str]) -> None:
    """What a rehearsal that did not end leaves to read: each unfinished order with its outbox rows and
    deposits, and the errors in the processes' logs."""
    for order_id, order_type, status, settlement, error in _query(
        database_url,
        "SELECT id::text, type, status, settlement::text, error_details FROM orders_order WHERE status NOT IN "
        "('executed', 'refunded', 'failure') ORDER BY created_at",
    ):
        if order_id not in order_ids:
            continue
        print(f"unfinished: {order_id} {order_type} {status} {settlement} {error or ''}", file=sys.stderr)
        for key, tx_status, broadcasts, tx_error in _query(
            database_url,
            "SELECT key, status, broadcasts, error FROM chains_outboxtx WHERE key LIKE %s ORDER BY created_at",
            (f"%{order_id}%",),
        ):
            print(f"  outbox {key} {tx_status} broadcasts={broadcasts} {tx_error}", file=sys.stderr)
    for log in sorted(logs.glob("*.log")):
        errors = [
            line
            for line in log.read_text(errors="replace").splitlines()
            if "ERROR" in line or "Error" in line
        ]
        for line in errors[-15:]:
            print(f"  {log.name}: {line[:400]}", file=sys.stderr)


def _get(url: str) -> dict | None:
    try:
        answer = requests.get(url, timeout=10)
    except requests.RequestException:
        return None
    return answer.json() if answer.status_code == 200 else None


if __name__ == "__main__":
    sys.exit(main())
