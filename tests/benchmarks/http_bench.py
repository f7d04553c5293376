"""`make bench`: the hot paths over HTTP, side by side with two references, in one run.

Starts gunicorn with config/gunicorn_conf.py, as `make run` does (gthread,
2 processes x 8 threads; no access log here), on
PostgreSQL + Redis (BENCH_DATABASE_URL / BENCH_REDIS_URL, default the local
ones), and on the same settings the references: a bare Django JSON view, and
the same view making one indexed query (the floor of any database-backed
read); drives each endpoint with wrk (16 connections) and prints req/s, p50,
p95, p99 and the ratio to each reference, then one-connection medians of the
hot paths. Then the surge, webhook fan-out to a local receiver, the watcher
and settlement on devnets (BENCH_PARTS=endpoints stops after the table; BENCH_PARTS=fanout runs the webhook
fan-out alone; BENCH_PARTS=surge the flash sale alone).
Writes the figures to docs/benchmarks.md. Not a test: nothing here asserts a
time.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/checkout_bench")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
EVENTS = int(os.environ.get("BENCH_EVENTS", "1000000"))
DURATION = os.environ.get("BENCH_DURATION", "10s")
CONNECTIONS = os.environ.get("BENCH_CONNECTIONS", "16")
FANOUT_EVENTS = int(os.environ.get("BENCH_FANOUT_EVENTS", "200"))
FANOUT_ENDPOINTS = int(os.environ.get("BENCH_FANOUT_ENDPOINTS", "5"))
# Events come from many web requests at once, not from one loop: this many processes emit them.
FANOUT_PRODUCERS = int(os.environ.get("BENCH_FANOUT_PRODUCERS", "4"))
WATCHED = [int(n) for n in os.environ.get("BENCH_WATCHED_ADDRESSES", "1000,10000,100000").split(",")]
SETTLE_ORDERS = int(os.environ.get("BENCH_SETTLE_ORDERS", "20"))
TRANSACTIONS = int(os.environ.get("BENCH_TRANSACTIONS", "100000"))
# Reconciliation of a chain whose ledger holds this many settled orders (seeded in bulk after the settlement run).
RECONCILE_ORDERS = int(os.environ.get("BENCH_RECONCILE_ORDERS", "10000"))
# The flash sale on the hosted page (tests/benchmarks/surge.py).
SURGE_PAYERS = int(os.environ.get("BENCH_SURGE_PAYERS", "2000"))
SURGE_RAMP = float(os.environ.get("BENCH_SURGE_RAMP_SECONDS", "30"))
SURGE_POLL = float(os.environ.get("BENCH_SURGE_POLL_SECONDS", "120"))
SURGE_CONNECTIONS = int(os.environ.get("BENCH_SURGE_CONNECTIONS", "64"))
BARE, ONE_QUERY = "bare Django JSON view", "bare view with one indexed query"
# The targets (x the one-query view, in the same run: issue 46); rows without one have none.
TARGETS = {
    "GET /api/v1/api-keys": 0.5,
    "GET /orders/{id}": 0.5,
    "GET /api/v1/payment-links": 0.5,
    "POST /orders": 0.15,
    f"GET /api/v1/events ({EVENTS:,} events)": 0.4,
    "GET /pay/s/{id}/status (the page's poll)": 0.5,
}
# p95 at 16 connections (ms), and the one-connection median (ms), where the issue sets one.
P95_TARGETS_MS = {
    "GET /dashboard/ (home)": 150,
    f"GET /dashboard/payments/ ({TRANSACTIONS:,} transactions)": 150,
}
ONE_CONNECTION_TARGETS_MS = {"GET /orders/{id}": 2.0}
PARTS = os.environ.get("BENCH_PARTS", "all")
SURGE_POLL_P99_TARGET_MS, SURGE_LINK_P95_TARGET_MS = 250, 1000
PAYER_POST_TARGET_MS, PAYER_DEPOSIT_TARGET_MS = 10.0, 3.0  # a payer's steps, one at a time (issue 46)
FANOUT_RATE_TARGET, FANOUT_P99_TARGET_MS = 300, 1000
SETTLE_MEDIAN_TARGET, SETTLE_WORST_TARGET = 3.0, 5.0
WATCHER_SCAN_TARGET_MS = 1000

ENV = {
    **os.environ,
    "SERVICE_ENV": "development",
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DATABASE_URL": DATABASE_URL,
    "REDIS_URL": REDIS_URL,
    "CELERY_BROKER_URL": REDIS_URL,
    "LOG_LEVEL": "WARNING",
    # One key makes every request here: lift the limits so the numbers measure work, not 429s.
    "PLATFORM_RATE_LIMIT_PER_MINUTE": "100000000",
    "ORDER_WRITE_RATE_LIMIT_PER_MINUTE": "100000000",
    "AUTH_FAILURE_RATE_LIMIT_PER_MINUTE": "100000000",
    "HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE": "100000000",  # the surge's payers all come from 127.0.0.1
    # POST /orders pays on Base, as if the service's factory were deployed there.
    "DEPOSIT_FACTORY_ADDRESS": "0x5FbDB2315678afecb367f032d93F642f64180aa3",
}
ENV.pop("DJANGO_DEBUG", None)
os.environ.update(ENV)


def _fail(message: str) -> NoReturn:
    print(f"make bench: {message}", file=sys.stderr)
    sys.exit(2)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ensure_database() -> None:
    import psycopg

    base, _, name = DATABASE_URL.rpartition("/")
    try:
        with psycopg.connect(f"{base}/postgres", autocommit=True, connect_timeout=5) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        _fail(f"PostgreSQL is not reachable at {base} ({exc}); set BENCH_DATABASE_URL.")


def _seed() -> dict[str, str]:
    """Migrate, load tokens, one organization with a key, an order, and EVENTS audit events."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from audit.models import AuditEvent
    from platform_api.services import api_key_create, organization_get_or_create
    from tests.orders.conftest import order_body

    call_command("migrate", verbosity=0)
    call_command("load_tokens", stdout=open(os.devnull, "w"))  # noqa: SIM115
    organization = organization_get_or_create(slug="bench")
    _, key = api_key_create(organization=organization, name="bench", permissions=["admin"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_HOST="127.0.0.1")
    order = client.post("/orders", order_body(), content_type="application/json").json()["data"]
    have = AuditEvent.objects.filter(organization=organization).count()
    if have < EVENTS:
        print(f"seeding {EVENTS - have:,} audit events ...", flush=True)
        table = AuditEvent._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (id, organization_id, event_type, resource_type, resource_id, ip_address, "  # noqa: S608
                "request_method, request_path, status_code, actor, created_at) "
                "SELECT 'evt_b' || lpad(g::text, 8, '0') || substr(md5(random()::text), 1, 12), %s, "
                "CASE WHEN g %% 10 = 0 THEN 'webhook.created' ELSE 'api_key.created' END, "
                "'api_key', 'ak_' || g, '203.0.113.7', 'POST', '/api/v1/api-keys', 201, 'api_key:ak_bench', "
                "now() - (g || ' seconds')::interval FROM generate_series(1, %s) AS g",
                [organization.pk, EVENTS - have],
            )
        with connection.cursor() as cursor:  # as autovacuum would: statistics and the visibility map
            cursor.execute(f"VACUUM ANALYZE {table}")
    _seed_transactions(organization.pk)
    from checkout.models import Transaction

    newest = Transaction.objects.filter(organization=organization).order_by("-created_at")
    return {
        "key": key,
        "order_id": order["id"],
        "organization": organization.pk,
        "payment_id": newest.values_list("id", flat=True).first(),
        "dashboard_cookie": _dashboard_session(organization),
        **_seed_checkout(client),
    }


def _dashboard_session(organization) -> str:
    """A signed-in dashboard session of an admin member (no second factor), as its cookie."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from dashboard.auth import GENERATION
    from dashboard.members import member_create
    from dashboard.models import Member

    member = Member.objects.filter(organization=organization, user__username="bench@shop.example").first()
    if member is None:
        get_user_model().objects.filter(username="bench@shop.example").delete()
        member = member_create(
            organization=organization,
            email="bench@shop.example",
            role="admin",
            password="bench passphrase 2026",
        )
    client = Client()
    client.force_login(member.user)
    session = client.session
    session[GENERATION] = member.session_generation
    session.save()
    return f"sessionid={session.session_key}"


def _seed_transactions(organization_id: str) -> None:
    """TRANSACTIONS payments over the last 400 days (four in five completed), for the analytics overview."""
    from django.db import connection

    from checkout.models import PaymentLink, Transaction
    from tests.orders.conftest import RECIPIENT, USDC_ARB, USDC_BASE

    table = Transaction._meta.db_table
    # The payer's answers, encrypted with this service's key as the model stores them: every row shares one
    # ciphertext of {} (the pages that read a whole payment decrypt it). Rows of an earlier seeding that
    # wrote a bare '{}' are mended.
    empty_answers = Transaction._meta.get_field("form_data").get_prep_value({})
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET form_data = %s WHERE organization_id = %s AND form_data = '{{}}'",  # noqa: S608
            [empty_answers, organization_id],
        )
    have = Transaction.objects.filter(organization_id=organization_id).count()
    if have >= TRANSACTIONS:
        return
    print(f"seeding {TRANSACTIONS - have:,} transactions ...", flush=True)
    links = [
        PaymentLink.objects.create(
            organization_id=organization_id,
            name=f"Bench link {i}",
            chain_id=8453,
            token_address=USDC_BASE,
            recipient_address=RECIPIENT,
        ).pk
        for i in range(20)
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (id, organization_id, order_id, payment_link_id, status, tx_hash, chain_id, "  # noqa: S608
            "from_address, to_address, token_address, amount, amount_usd, source_chain_id, source_token_address, "
            "source_amount, fee_amount, refunded_amount, amount_refunded, refund_ids, form_data, metadata, created_at, "
            "updated_at, completed_at) "
            "SELECT 'txn_b' || lpad(g::text, 8, '0') || substr(md5(random()::text), 1, 10), %s, gen_random_uuid(), "
            "(%s::text[])[1 + g %% 20], CASE WHEN g %% 5 = 0 THEN 'failed' ELSE 'completed' END, '', "
            "CASE WHEN g %% 3 = 0 THEN 42161 ELSE 8453 END, '', %s, CASE WHEN g %% 3 = 0 THEN %s ELSE %s END, "
            "(g %% 500 + 1) * 1000000, (g %% 500 + 1)::numeric, 8453, %s, (g %% 500 + 1) * 1000000, 0, 0, 0, '[]', %s, "
            "'{}', "
            "now() - (g * 345 || ' seconds')::interval, now() - (g * 345 || ' seconds')::interval, "
            "CASE WHEN g %% 5 = 0 THEN NULL ELSE now() - (g * 345 || ' seconds')::interval END "
            "FROM generate_series(1, %s) AS g",
            [
                organization_id,
                links,
                RECIPIENT,
                USDC_ARB,
                USDC_BASE,
                USDC_BASE,
                empty_answers,
                TRANSACTIONS - have,
            ],
        )
        cursor.execute(f"VACUUM ANALYZE {table}")
    from checkout.analytics import revenue_rebuild

    revenue_rebuild()  # rows written by SQL, not by completed checkouts: their rollup, as the command makes it


def _seed_checkout(client) -> dict[str, str]:
    """A payment link on Base, and a session of it whose payer chose USDC on Base (the deposit page)."""
    from checkout import payments
    from checkout.models import CheckoutSession
    from tests.orders.conftest import RECIPIENT, USDC_BASE

    link = client.post(
        "/api/v1/payment-links",
        {
            "name": "Bench poster",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
            "amount": "25000000",
            "items": [{"name": "Poster", "amount": "25000000"}],
            "form_schema": {"fields": [{"id": "email", "type": "email", "label": "Email", "required": True}]},
        },
        content_type="application/json",
    ).json()
    session_id = client.post(
        "/api/v1/checkout-sessions", {"payment_link_id": link["id"]}, content_type="application/json"
    ).json()["id"]
    session = CheckoutSession.objects.get(pk=session_id)
    payments.session_order_create(
        session=session, src_chain=8453, src_token=USDC_BASE, payer_ip="203.0.113.9"
    )
    widget = client.post(
        "/api/v1/widgets",
        {
            "name": "Bench widget",
            "widget_type": "checkout",
            "config": {
                "recipient_address": RECIPIENT,
                "destination_token": USDC_BASE,
                "destination_chain_id": 8453,
                "amount": "5000000",
            },
        },
        content_type="application/json",
    ).json()
    surge = client.post(
        "/api/v1/payment-links",
        {
            "name": "Bench flash sale",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
            "amount": "15000000",
            "items": [{"name": "Mint pass", "amount": "15000000"}],
        },
        content_type="application/json",
    ).json()
    return {
        "short_code": link["short_code"],
        "link_id": link["id"],
        "session_id": session_id,
        "widget_code": widget["short_code"],
        "surge_code": surge["short_code"],
        "pay_with": f"8453:{USDC_BASE}",
    }


def _one_at_a_time(url: str, headers: dict[str, str], runs: int = 30) -> dict[str, float]:
    """Server time of one request with nothing else running: median and worst of `runs` (ms)."""
    import statistics

    import requests

    times = []
    with requests.Session() as session:
        for _ in range(runs + 3):
            start = time.perf_counter()
            session.get(url, headers=headers, timeout=30).raise_for_status()
            times.append((time.perf_counter() - start) * 1000)
    times = times[3:]  # warm-up
    return {"median": statistics.median(times), "worst": max(times)}


def _gunicorn(app: str, port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "-c",
            str(ROOT / "config" / "gunicorn_conf.py"),
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            app,
        ],
        cwd=ROOT,
        env={**ENV, "GUNICORN_ACCESS_LOG": ""},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    _fail(f"gunicorn {app} did not start")


def _wrk(url: str, *, headers: dict[str, str], body: dict | None = None) -> dict[str, float]:
    command = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{DURATION}", "--latency", url]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)  # noqa: SIM115
    if body is not None:
        script.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n')
        script.write('wrk.headers["Content-Type"] = "application/json"\n')
    # wrk's --latency prints 50/75/90/99; the 95th comes from its histogram (microseconds).
    script.write(
        'done = function(summary, latency, requests)\n  io.write(string.format("P95 %d\\n", '
        "latency:percentile(95)))\nend\n"
    )
    script.close()
    command += ["-s", script.name]
    warm_up = ["-d2s" if c.startswith("-d") else c for c in command]
    subprocess.run(warm_up, capture_output=True, check=True)  # warm up: connections, caches, lazy imports
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    os.unlink(script.name)
    p95 = re.search(r"^P95 (\d+)$", output, re.MULTILINE)

    def latency(percentile: str) -> float:
        match = re.search(rf"^\s+{percentile}%\s+([\d.]+)(us|ms|s)\s*$", output, re.MULTILINE)
        if not match:
            return float("nan")
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    timeouts = re.search(r"Socket errors: .*timeout (\d+)", output)
    return {
        "rate": rate,
        "p50": latency("50"),
        "p95": int(p95.group(1)) / 1000 if p95 else float("nan"),
        "p99": latency("99"),
        "errors": int(errors.group(1)) if errors else 0,
        "timeouts": int(timeouts.group(1)) if timeouts else 0,
    }


class _Receiver(BaseHTTPRequestHandler):
    received = None  # a multiprocessing.Value, shared with the bench

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with _Receiver.received.get_lock():
            _Receiver.received.value += 1
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def _serve_receiver(received, port) -> None:
    """The webhook receiver, in its own process: a real receiver is another service, with its own GIL."""
    _Receiver.received = received
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    port.value = server.server_port
    server.serve_forever()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_by_group(app_pid: int) -> dict[str, float]:
    """CPU seconds so far of the service's gunicorn (master and workers), PostgreSQL's processes and this one
    (the load generator), from /proc."""
    totals = {"gunicorn": 0.0, "postgres": 0.0, "load generator": _cpu_seconds(os.getpid())}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        fields = rest.split()
        seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if int(entry.name) == app_pid or int(fields[1]) == app_pid:
            totals["gunicorn"] += seconds
        elif name == "postgres":
            totals["postgres"] += seconds
    return totals


class _CpuSampler:
    """Each group's share of the machine's cores, every `every` seconds, while a phase runs."""

    def __init__(self, app_pid: int, every: float = 5.0) -> None:
        import threading

        self.app_pid, self.every, self.samples = app_pid, every, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = _cpu_by_group(self.app_pid)
        while not self._stop.wait(self.every):
            now = _cpu_by_group(self.app_pid)
            self.samples.append({k: (now[k] - last[k]) / self.every / (os.cpu_count() or 1) for k in now})
            last = now

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def busiest(self) -> dict[str, float]:
        """The sample in which the service (gunicorn + PostgreSQL) used the most CPU."""
        return max(self.samples, key=lambda s: s["gunicorn"] + s["postgres"], default={})


def _emit_events(organization_id: str, count: int) -> None:
    """One producer: `count` events, each committed on its own, as a web request would."""
    from django.db import transaction

    from platform_api.models import Organization
    from webhooks.events import emit_event

    organization = Organization.objects.get(pk=organization_id)
    for _ in range(count):
        with transaction.atomic():
            emit_event(organization=organization, event_type="payment.completed", data={"bench": True})


def _fanout(organization_id: str) -> dict[str, float]:
    """Deliveries/s to a local receiver, and commit-to-first-attempt p99, with a real thread-pool worker."""
    from django.db import connections

    from platform_api.context import RequestContext
    from platform_api.models import Organization
    from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
    from webhooks.services import webhook_endpoint_create

    received, port = multiprocessing.Value("i", 0), multiprocessing.Value("i", 0)
    receiver = multiprocessing.get_context("fork").Process(target=_serve_receiver, args=(received, port))
    connections.close_all()  # the child must not share the parent's database connection
    receiver.start()
    while not port.value:
        time.sleep(0.05)
    organization = Organization.objects.get(pk=organization_id)
    WebhookEndpoint.objects.filter(organization=organization).delete()
    ctx = RequestContext(
        organization=organization, api_key=None, ip_address="127.0.0.1", method="POST", path="/"
    )
    for _ in range(FANOUT_ENDPOINTS):
        webhook_endpoint_create(ctx=ctx, url=f"http://127.0.0.1:{port.value}/hook", events=["*"])
    from config.supervise import commands

    # The webhook workers exactly as `make run` starts them.
    workers = [
        subprocess.Popen([*command[:-1], "WARNING"], cwd=ROOT, env=ENV)
        for name, command in commands(0, BIN).items()
        if name.startswith("webhooks")
    ]
    try:
        time.sleep(5)  # the workers start and connect
        idle_cpu = sum(_cpu_seconds(worker.pid) for worker in workers)
        total = FANOUT_EVENTS * FANOUT_ENDPOINTS
        started = time.monotonic()
        connections.close_all()
        producers = [
            multiprocessing.get_context("fork").Process(
                target=_emit_events, args=(organization_id, FANOUT_EVENTS // FANOUT_PRODUCERS)
            )
            for _ in range(FANOUT_PRODUCERS)
        ]
        for producer in producers:
            producer.start()
        for producer in producers:
            producer.join()
        deadline = time.monotonic() + 300
        while received.value < total and time.monotonic() < deadline:
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        delays = sorted(
            (attempt.created_at - attempt.delivery.created_at).total_seconds()
            for attempt in WebhookAttempt.objects.filter(
                number=1, delivery__endpoint__organization=organization
            ).select_related("delivery")
        )
        worker_cpu = sum(_cpu_seconds(worker.pid) for worker in workers) - idle_cpu
        if not os.environ.get("BENCH_KEEP_DELIVERIES"):
            WebhookDelivery.objects.filter(endpoint__organization=organization).delete()
        return {
            "deliveries": received.value,
            "rate": received.value / elapsed,
            "p99": delays[int(len(delays) * 0.99) - 1] * 1000 if delays else float("nan"),
            "worker_ms": worker_cpu / max(received.value, 1) * 1000,
        }
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=30)
        receiver.terminate()


def _fanout_line(fanout: dict[str, float]) -> str:
    return (
        f"Webhook fan-out: {fanout['deliveries']:.0f} deliveries ({FANOUT_EVENTS} events from {FANOUT_PRODUCERS} "
        f"processes x {FANOUT_ENDPOINTS} endpoints) at {fanout['rate']:.0f} deliveries/s "
        f"(target >= {FANOUT_RATE_TARGET}: {'met' if fanout['rate'] >= FANOUT_RATE_TARGET else 'MISSED'}); "
        f"event commit to first attempt p99 {fanout['p99']:.0f} ms (target <= {FANOUT_P99_TARGET_MS}: "
        f"{'met' if fanout['p99'] <= FANOUT_P99_TARGET_MS else 'MISSED'}); "
        f"webhook workers' CPU {fanout['worker_ms']:.1f} ms per delivery."
    )


def _use_chains(chains: list[dict]) -> None:
    """This process's registry from now on (the registry is cached; assigning the setting alone keeps the old)."""
    from django.conf import settings

    from chains.registry import chains_seed

    settings.CHAINS = chains
    chains_seed(chains, replace=True)  # the chains are rows: the worker and beat read the same ones


def _watcher() -> list[dict[str, float]] | None:
    """One deposit scan of a devnet (traces on, as anvil offers them) with each of WATCHED open payments' worth
    of watched addresses: the blocks of a few payments, HTTP requests to the node, and time (handlers
    included). The requests must not grow with the addresses."""
    import dataclasses

    from django.conf import settings
    from django.utils import timezone
    from web3 import Web3

    from chains.devnet import ANVIL, deploy, forget_devnet_transactions
    from chains.models import ChainCursor, Deposit, WatchedAddress
    from chains.registry import Chain
    from chains.wallet import devnet_transfer
    from chains.watcher import scan_chain

    if not ANVIL.exists():
        print("make bench: anvil is not installed (make install); no watcher figure", file=sys.stderr)
        return None
    port = _free_port()
    node = subprocess.Popen([str(ANVIL), "--port", str(port), "--chain-id", "31337", "--silent"])
    try:
        chain = Chain(
            chain_id=31337,
            name="Devnet A",
            native_symbol="ETH",
            rpc_urls=(f"http://127.0.0.1:{port}",),
            confirmations=1,
            factory_address=settings.DEVNET_FACTORY_ADDRESS,
            devnet=True,
            traces=True,
        )
        from chains.devnet import wait_until_up

        wait_until_up(chain)
        deployment = deploy(chain)
        forget_devnet_transactions([31337])  # a fresh node: the database's Devnet A is an earlier life
        _use_chains([dataclasses.asdict(chain)])
        results = []
        for watched in WATCHED:
            WatchedAddress.objects.filter(chain_id=31337).delete()
            until = timezone.now() + timezone.timedelta(hours=1)
            addresses = [Web3.to_checksum_address(f"0x{n:040x}") for n in range(1, watched + 1)]
            # The previous run's deposits to these addresses (an earlier run's settlement orders keep theirs).
            Deposit.objects.filter(chain_id=31337, owner__startswith="bench:").delete()
            WatchedAddress.objects.bulk_create(
                [
                    WatchedAddress(chain_id=31337, address=a, owner=f"bench:{i}", watch_until=until)
                    for i, a in enumerate(addresses)
                ],
                batch_size=5000,
            )
            head = Web3(Web3.HTTPProvider(chain.rpc_url)).eth.block_number
            ChainCursor.objects.update_or_create(
                chain_id=31337, defaults={"scanned_to": head, "scanned_hash": "", "leased_until": None}
            )
            for index in range(5):  # some payments to find, in both kinds, spread over the addresses
                devnet_transfer(
                    chain=chain,
                    token=deployment["contracts"]["dUSDC"],
                    to=addresses[(index * 7919) % watched],
                    amount=10**6,
                    from_account=1 + index % 8,
                )
                devnet_transfer(
                    chain=chain,
                    token="0x" + "00" * 20,
                    to=addresses[(index * 104729) % watched],
                    amount=10**15,
                    from_account=1 + index % 8,
                )
            time.sleep(3)  # a few more blocks, so that the payments are confirmed
            started = time.monotonic()
            result = scan_chain(31337)
            elapsed = time.monotonic() - started
            if result is None:
                return None
            results.append(
                {
                    "watched": watched,
                    "blocks": result.scanned_to - result.scanned_from + 1,
                    "deposits": result.deposits,
                    "requests": result.rpc_requests,
                    "ms": elapsed * 1000,
                }
            )
        return results
    finally:
        node.terminate()
        node.wait(timeout=10)
        WatchedAddress.objects.filter(chain_id=31337).delete()


def _settlement() -> dict | None:
    """Deposit to `executed` for SETTLE_ORDERS orders of every type, Devnet A to Devnet B, with the worker and
    beat as `make run` starts them: seconds from the payment's receipt to the order's `filledAt`."""
    import dataclasses
    import statistics

    from django.utils import timezone
    from rest_framework.test import APIClient
    from web3 import Web3
    from web3.types import RPCEndpoint

    from chains.devnet import (
        ANVIL,
        deploy,
        devnet_signer_environment,
        forget_devnet_transactions,
        token_list,
        wait_until_up,
    )
    from chains.registry import Chain
    from chains.tokens import token_list_load
    from chains.wallet import devnet_transfer
    from chains.watcher import scan_chain
    from config.supervise import commands
    from ledger.management.commands.reconcile import render, token_symbols
    from ledger.reconcile import adopt, reconcile_chain, restart_devnet
    from orders.models import Order
    from tests.orders.devnet_checkout import checkout

    if not ANVIL.exists():
        print("make bench: anvil is not installed (make install); no settlement figure", file=sys.stderr)
        return None
    ports = [_free_port(), _free_port()]
    nodes = [
        subprocess.Popen(
            [str(ANVIL), "--port", str(port), "--chain-id", str(31337 + n), "--block-time", "1", "--silent"]
        )  # a block a second, as the targets are set for: a payment is confirmed by the clock
        for n, port in enumerate(ports)
    ]
    children: list[subprocess.Popen] = []
    try:
        chains = [
            Chain(
                chain_id=31337 + n,
                name=f"Devnet {'AB'[n]}",
                native_symbol="ETH",
                devnet=True,
                rpc_urls=(f"http://127.0.0.1:{port}",),
                confirmations=1,
                poll_interval_seconds=1,
                factory_address="0x5FbDB2315678afecb367f032d93F642f64180aa3",
            )
            for n, port in enumerate(ports)
        ]
        for chain in chains:
            wait_until_up(chain)
        deployments = [deploy(chain) for chain in chains]
        forget_devnet_transactions([chain.chain_id for chain in chains])  # this database outlives the nodes
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as listing:
            json.dump(token_list(deployments), listing)
        token_list_load(Path(listing.name))
        registry = json.dumps([dataclasses.asdict(chain) for chain in chains])
        _use_chains(json.loads(registry))
        for chain in chains:  # the ledger opens at what the fresh devnets hold (as `make run` does)
            restart_devnet(chain.chain_id, reason="make bench: new devnets")
            Web3(Web3.HTTPProvider(chain.rpc_urls[0])).provider.make_request(RPCEndpoint("evm_mine"), [])
            scan_chain(chain.chain_id)
            adopt(
                reconcile_chain(chain.chain_id, opening=True), reason="make bench: devnet funding", by="bench"
            )
        schedule = Path(tempfile.mkdtemp()) / "beat-schedule"
        env = {**ENV, "CHAINS": registry, **devnet_signer_environment()}
        for name, command in commands(0, BIN).items():
            if name in ("worker", "beat"):
                command = [*command[:-1], "WARNING"] if name == "worker" else [*command[:-1], str(schedule)]
                children.append(subprocess.Popen(command, cwd=ROOT, env=env))  # the worker signs; beat never
        time.sleep(5)  # the worker and beat start and connect
        client = APIClient(HTTP_HOST="localhost")
        types = [
            "swap",
            "x402_swap",
            "duel",
            "custom",
            "custom_exact_in",
            "mint_nft",
            "join_tournament",
            "fund_tournament",
        ]
        paid: dict[str, float] = {}
        for n in range(SETTLE_ORDERS):
            order_id, _ = checkout(client, deployments[0], deployments[1], types[n % len(types)])
            order = Order.objects.get(pk=order_id)
            devnet_transfer(
                chain=chains[0],
                token=order.src_token_address,
                to=order.global_address,
                amount=int(order.src_amount),
                from_account=1 + n % 8,
            )
            paid[order_id] = timezone.now().timestamp()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            orders = list(Order.objects.filter(pk__in=list(paid)))
            if all(o.status in ("executed", "refunded", "failure") for o in orders):
                break
            time.sleep(0.5)
        took = sorted(o.filled_at.timestamp() - paid[str(o.pk)] for o in orders if o.status == "executed")
        # The ledger against the busy devnets: a block past the last transaction, confirmed by beat's watcher.
        for chain in chains:
            Web3(Web3.HTTPProvider(chain.rpc_urls[0])).provider.make_request(RPCEndpoint("evm_mine"), [])
        time.sleep(5)
        started = time.perf_counter()
        runs = [reconcile_chain(chain.chain_id) for chain in chains]
        reconcile_ms = (time.perf_counter() - started) * 1000
        symbols = token_symbols()
        at_scale = _reconcile_at_scale(chains[0].chain_id, deployments[0]["contracts"]["dUSDC"])
        return {
            "reconcile": [line for run in runs for line in render(run, symbols)],
            "reconcile_ms": reconcile_ms,
            "at_scale": at_scale,
            "orders": len(paid),
            "executed": len(took),
            "median": statistics.median(took) if took else float("nan"),
            "worst": took[-1] if took else float("nan"),
        }
    finally:
        for child in children + nodes:
            child.terminate()
        for child in children + nodes:
            child.wait(timeout=30)


def _reconcile_at_scale(chain_id: int, token: str) -> dict:
    """`reconcile_chain` on a chain whose ledger holds RECONCILE_ORDERS more settled orders, each as settlement
    posts it (the deposit, its sweep into the vault, the fee, the delivery through the relay provider) and the
    fee then withdrawn, so the vault's balance is what the chain holds. The postings are written in bulk (the
    postings' shape, not `post`'s speed, is measured), at the block the watcher confirmed."""
    import time as clock

    from django.db import transaction

    from chains.models import ChainCursor
    from chains.signers import signer_address
    from ledger.models import Account, Entry, Posting
    from ledger.reconcile import reconcile_chain

    Kind = Account.Kind
    token = token.lower()
    vault = signer_address("vault").lower()
    block = ChainCursor.objects.get(pk=chain_id).scanned_to
    seed = f"{int(clock.time())}"

    def account(kind: str, ref: str) -> Account:
        return Account.objects.get_or_create(chain_id=chain_id, token=token, kind=kind, ref=ref)[0]

    shared = {
        "vault": account(Kind.VAULT, vault),
        "fees": account(Kind.FEES, vault),
        "operator": account(Kind.OPERATOR, "bench"),
        **{f"payer{n}": account(Kind.PAYER, f"0x{n + 1:040x}") for n in range(8)},
        **{f"recipient{n}": account(Kind.RECIPIENT, f"0x{n + 0xB0:040x}") for n in range(8)},
    }
    started = time.perf_counter()
    batch = 1000
    for first in range(0, RECONCILE_ORDERS, batch):
        numbers = range(first, min(first + batch, RECONCILE_ORDERS))
        with transaction.atomic():
            deposit_accounts = Account.objects.bulk_create(
                Account(
                    chain_id=chain_id,
                    token=token,
                    kind=Kind.DEPOSIT_ADDRESS,
                    ref=f"0x{seed}{n:0{40 - len(seed)}x}",
                )
                for n in numbers
            )
            postings, legs = [], []
            for n, deposit in zip(numbers, deposit_accounts, strict=True):
                paid, fee = 1_000_000 + n, (1_000_000 + n) // 100
                payer, recipient = shared[f"payer{n % 8}"], shared[f"recipient{n % 8}"]
                for kind, moves in (
                    ("deposit", [(deposit, payer, paid)]),
                    ("sweep", [(shared["vault"], deposit, paid)]),
                    ("fee", [(shared["fees"], shared["vault"], fee)]),
                    ("delivery", [(recipient, shared["vault"], paid - fee)]),
                    ("adjustment", [(shared["operator"], shared["fees"], fee)]),
                ):
                    postings.append(
                        Posting(
                            key=f"bench:{seed}:{n}:{kind}",
                            kind=kind,
                            chain_id=chain_id,
                            block_number=None if kind == "fee" else block,
                            memo="make bench: a settled order at scale" if kind == "adjustment" else "",
                        )
                    )
                    legs.append(moves)
            postings = Posting.objects.bulk_create(postings)
            Entry.objects.bulk_create(
                entry
                for posting, moves in zip(postings, legs, strict=True)
                for into, out_of, amount in moves
                for entry in (
                    Entry(posting=posting, account=into, side=Entry.Side.DEBIT, amount=amount),
                    Entry(posting=posting, account=out_of, side=Entry.Side.CREDIT, amount=amount),
                )
            )
    seeded_s = time.perf_counter() - started
    started = time.perf_counter()
    run = reconcile_chain(chain_id)
    took = time.perf_counter() - started
    return {
        "orders": RECONCILE_ORDERS,
        "postings": Posting.objects.filter(chain_id=chain_id).count(),
        "entries": Entry.objects.filter(account__chain_id=chain_id).count(),
        "seeded_s": seeded_s,
        "ms": took * 1000,
        "differences": run.differences if not run.error else run.error,
    }


class _EndpointsOnly(Exception):
    """BENCH_PARTS=endpoints: the table only."""


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def _endpoint_lines(
    rows: list[tuple[str, dict[str, float]]],
    baseline: dict[str, float],
    floor: dict[str, float],
    one_connection: dict[str, dict[str, float]],
) -> list[str]:
    """The endpoints' table (each ratio to both references, the target against the one-query view, and p95
    targets), then the one-connection medians."""
    lines = [
        "| endpoint | req/s | p50 ms | p95 ms | p99 ms | x bare | x one-query | target | non-2xx | time-outs (> 2 s) |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for name, row in rows:
        ratio, to_floor = row["rate"] / baseline["rate"], row["rate"] / floor["rate"]
        verdicts = []
        if (target := TARGETS.get(name)) is not None:
            verdicts.append(f">= {target:.2f} x one-query: {_verdict(to_floor >= target)}")
        if (p95 := P95_TARGETS_MS.get(name)) is not None:
            verdicts.append(f"p95 <= {p95} ms: {_verdict(row['p95'] <= p95)}")
        lines.append(
            f"| {name} | {row['rate']:.0f} | {row['p50']:.1f} | {row['p95']:.1f} | {row['p99']:.1f} | "
            f"{ratio:.2f} | {to_floor:.2f} | {'; '.join(verdicts)} | {row['errors']} | {row['timeouts']} |"
        )
    lines += ["", "One connection, one request at a time (200 after 3 to warm up):", ""]
    lines += ["| path | median ms | worst ms | target |", "|---|---:|---:|---|"]
    for name, figures in one_connection.items():
        target = ONE_CONNECTION_TARGETS_MS.get(name)
        verdict = (
            "" if target is None else f"median <= {target:.0f} ms: {_verdict(figures['median'] <= target)}"
        )
        lines.append(f"| {name} | {figures['median']:.2f} | {figures['worst']:.1f} | {verdict} |")
    lines.append("")
    return lines


def _run_surge(pid: int, base: str, seeded: dict) -> dict:
    from tests.benchmarks.surge import payer_steps, run_surge

    print(f"surge: {SURGE_PAYERS:,} payers ...", flush=True)
    with _CpuSampler(pid) as cpu:
        surge = run_surge(
            base,
            code=seeded["surge_code"],
            pay_with=seeded["pay_with"],
            payers=SURGE_PAYERS,
            ramp=SURGE_RAMP,
            poll=SURGE_POLL,
            connections=SURGE_CONNECTIONS,
        )
    surge["cpu"] = cpu.busiest()
    surge["one at a time"] = payer_steps(base, code=seeded["surge_code"], pay_with=seeded["pay_with"])
    return surge


def _surge_lines(surge: dict) -> list[str]:
    lines: list[str] = []
    polls = surge["steps"].get("status poll", {})
    poll_ok = polls.get("p99", float("inf")) <= SURGE_POLL_P99_TARGET_MS
    link_ok = surge["steps"].get("link page", {}).get("p95", float("inf")) <= SURGE_LINK_P95_TARGET_MS
    errors = sum(step["errors"] for step in surge["steps"].values())
    lines.append(
        f"Surge: {surge['payers']:,} payers arriving over {SURGE_RAMP:.0f} s (a flash sale), each opening the link "
        f"page, starting a checkout, opening the deposit page and polling its status every 2 s for "
        f"{SURGE_POLL:.0f} s, over {SURGE_CONNECTIONS} shared keep-alive connections ({surge['seconds']:.0f} s in "
        f"all; {surge['not_modified']:,} polls answered 304). Targets: 0 errors "
        f"({'met' if not errors else 'MISSED'}), link page p95 <= {SURGE_LINK_P95_TARGET_MS} ms "
        f"({'met' if link_ok else 'MISSED'}), poll p99 <= {SURGE_POLL_P99_TARGET_MS} ms "
        f"({'met' if poll_ok else 'MISSED'})."
    )
    busiest = surge["cpu"]
    if busiest:
        lines.append("")
        lines.append(
            f"CPU in the surge's busiest 5 s, as shares of the machine's {os.cpu_count()} cores: the service's "
            f"gunicorn {busiest['gunicorn']:.0%}, PostgreSQL {busiest['postgres']:.0%}, the load generator "
            f"{busiest['load generator']:.0%}."
        )
    steps = surge["one at a time"]
    lines.append("")
    lines.append(
        "A payer's steps one at a time after the surge (server time with nothing else running, the median and "
        "worst of 40 payers): "
        + "; ".join(
            f"{step} {figures['median']:.1f} ms (worst {figures['worst']:.0f})"
            for step, figures in steps.items()
        )
        + f". Targets: start checkout <= {PAYER_POST_TARGET_MS:.0f} ms "
        f"({_verdict(steps['start checkout']['median'] <= PAYER_POST_TARGET_MS)}), deposit page <= "
        f"{PAYER_DEPOSIT_TARGET_MS:.0f} ms ({_verdict(steps['deposit page']['median'] <= PAYER_DEPOSIT_TARGET_MS)})."
    )
    lines.append("")
    lines.append(
        "| step | requests | p50 ms | p95 ms | p99 ms | errors | waited for a connection (p50, p95 of their waits) "
        "| opened a connection |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for step, figures in surge["steps"].items():
        lines.append(
            f"| {step} | {figures['count']:,} | {figures['p50']:.1f} | {figures['p95']:.1f} | "
            f"{figures['p99']:.1f} | {figures['errors']} | {figures['queued']:,} ({figures['queued p50']:.0f}, "
            f"{figures['queued p95']:.0f} ms) "
            f"| {figures['new connections']:,} |"
        )
    lines.append("")
    return lines


def main() -> None:
    if shutil.which("wrk") is None:
        _fail("wrk is not installed (Debian: apt-get install wrk).")
    _ensure_database()
    seeded = _seed()
    if PARTS == "fanout":
        print(_fanout_line(_fanout(seeded["organization"])))
        return
    auth = {"Authorization": f"Bearer {seeded['key']}"}
    from tests.orders.conftest import order_body

    app_port, bare_port = _free_port(), _free_port()
    app, bare = (
        _gunicorn("config.wsgi:application", app_port),
        _gunicorn("tests.benchmarks.bare_wsgi:application", bare_port),
    )
    base = f"http://127.0.0.1:{app_port}"
    rows: list[tuple[str, dict[str, float]]] = []
    references = {
        BARE: f"http://127.0.0.1:{bare_port}/bare",
        ONE_QUERY: f"http://127.0.0.1:{bare_port}/one-query/{seeded['order_id']}",
    }
    hot = {
        "GET /orders/{id}": (f"{base}/orders/{seeded['order_id']}", {}),
        "GET /api/v1/api-keys": (f"{base}/api/v1/api-keys", auth),
        "GET /api/v1/payment-links": (f"{base}/api/v1/payment-links", auth),
        "GET /pay/s/{id}/status (the page's poll)": (f"{base}/pay/s/{seeded['session_id']}/status", {}),
    }
    surge: dict = {}
    analytics: dict = {}
    try:
        if PARTS == "surge":
            print("\n".join(_surge_lines(_run_surge(app.pid, base, seeded))))
            return
        baseline = _wrk(references[BARE], headers={})
        floor = _wrk(references[ONE_QUERY], headers={})
        rows += [(BARE, baseline), (ONE_QUERY, floor)]
        one_connection = {
            name: _one_at_a_time(url, headers, runs=200)
            for name, (url, headers) in ({name: (url, {}) for name, url in references.items()} | hot).items()
        }
        for name, path, headers, body in (
            ("GET /api/v1/api-keys", "/api/v1/api-keys", auth, None),
            ("GET /orders/{id}", f"/orders/{seeded['order_id']}", {}, None),
            ("GET /api/v1/payment-links", "/api/v1/payment-links", auth, None),
            ("GET /chains/8453/tokens", "/chains/8453/tokens", {}, None),
            ("POST /orders", "/orders", {}, order_body()),
            (f"GET /api/v1/events ({EVENTS:,} events)", "/api/v1/events", auth, None),
            ("GET /api/v1/events?type=webhook.created", "/api/v1/events?type=webhook.created", auth, None),
            (
                f"GET /api/v1/analytics/overview ({TRANSACTIONS:,} transactions)",
                "/api/v1/analytics/overview",
                auth,
                None,
            ),
            (
                "GET /api/v1/analytics/overview?period=all",
                "/api/v1/analytics/overview?period=all",
                auth,
                None,
            ),
            (
                "GET /pay/{short_code} (hosted page, records a visit)",
                f"/pay/{seeded['short_code']}",
                {},
                None,
            ),
            (
                "GET /widgets/{short_code} (embeddable page, counts a view)",
                f"/widgets/{seeded['widget_code']}",
                {},
                None,
            ),
            ("GET /pay/s/{id} (deposit page, QR code)", f"/pay/s/{seeded['session_id']}", {}, None),
            ("GET /pay/s/{id}/status (the page's poll)", f"/pay/s/{seeded['session_id']}/status", {}, None),
            ("GET /dashboard/ (home)", "/dashboard/", {"Cookie": seeded["dashboard_cookie"]}, None),
            (
                f"GET /dashboard/payments/ ({TRANSACTIONS:,} transactions)",
                "/dashboard/payments/",
                {"Cookie": seeded["dashboard_cookie"]},
                None,
            ),
            (
                "GET /dashboard/analytics/",
                "/dashboard/analytics/",
                {"Cookie": seeded["dashboard_cookie"]},
                None,
            ),
            (
                "GET /dashboard/payments/{id}",
                f"/dashboard/payments/{seeded['payment_id']}",
                {"Cookie": seeded["dashboard_cookie"]},
                None,
            ),
            (
                f"GET /dashboard/payments/?q=(a payer's address; {TRANSACTIONS:,} transactions)",
                "/dashboard/payments/?q=0x52908400098527886e0f7030069857d2e4169ee7",
                {"Cookie": seeded["dashboard_cookie"]},
                None,
            ),
            (
                "GET /dashboard/links/{id} (stats, chart, items, checkouts)",
                f"/dashboard/links/{seeded['link_id']}",
                {"Cookie": seeded["dashboard_cookie"]},
                None,
            ),
            (
                "GET /dashboard/checkouts/{id}",
                f"/dashboard/checkouts/{seeded['session_id']}",
                {"Cookie": seeded["dashboard_cookie"]},
                None,
            ),
        ):
            rows.append((name, _wrk(base + path, headers=headers, body=body)))
        # The references again, after the endpoints: each is the better of its two runs, so that a reference
        # slowed by what ran before it (the seeding's vacuum, a checkpoint) flatters no ratio.
        baseline = max(baseline, _wrk(references[BARE], headers={}), key=lambda run: run["rate"])
        floor = max(floor, _wrk(references[ONE_QUERY], headers={}), key=lambda run: run["rate"])
        rows[:2] = [(BARE, baseline), (ONE_QUERY, floor)]
        # The poll of a browser that holds the current answer: 304 from the session's version in Redis.
        status_url = f"{base}/pay/s/{seeded['session_id']}/status"
        with urllib.request.urlopen(status_url, timeout=10) as answer:  # noqa: S310 - our own server
            etag = answer.headers["ETag"]
        rows.append(
            (
                "GET /pay/s/{id}/status, unchanged (If-None-Match: 304 without the database)",
                _wrk(status_url, headers={"If-None-Match": etag}),
            )
        )
        if PARTS == "endpoints":
            raise _EndpointsOnly

        surge = _run_surge(app.pid, base, seeded)
        analytics = {
            period: _one_at_a_time(f"{base}/api/v1/analytics/overview?period={period}", auth)
            for period in ("30d", "all")
        }
    except _EndpointsOnly:
        pass
    finally:
        for process in (app, bare):
            process.terminate()
            process.wait(timeout=30)
    lines = _endpoint_lines(rows, baseline, floor, one_connection)
    if PARTS == "endpoints":
        print("\n".join(lines))
        return
    fanout = _fanout(seeded["organization"])
    watcher = _watcher()
    settlement = _settlement()
    lines += _surge_lines(surge)
    lines.append(
        f"Analytics overview with {TRANSACTIONS:,} transactions, one request at a time: period=30d median "
        f"{analytics['30d']['median']:.0f} ms (worst {analytics['30d']['worst']:.0f}), period=all median "
        f"{analytics['all']['median']:.0f} ms (worst {analytics['all']['worst']:.0f})."
    )
    lines.append("")
    lines.append(_fanout_line(fanout))
    if watcher is not None:
        lines.append("")
        lines.append(
            "Deposit watcher, one scan of a devnet with traces (target: requests that do not grow with the "
            "addresses; a scan under 1 s): "
            + "; ".join(
                f"{w['watched']:,.0f} addresses, {w['blocks']:.0f} blocks, {w['deposits']:.0f} deposits found in "
                f"{w['requests']:.0f} HTTP requests, {w['ms']:.0f} ms"
                for w in watcher
            )
            + ". Targets: "
            + ("met" if len({w["requests"] for w in watcher}) == 1 else "MISSED (requests grow)")
            + ", "
            + (
                "met"
                if all(w["ms"] < WATCHER_SCAN_TARGET_MS for w in watcher)
                else "MISSED (a scan over 1 s)"
            )
            + "."
        )
    if settlement is not None:
        lines.append("")
        lines.append(
            f"Settlement: {settlement['executed']:.0f} of {settlement['orders']:.0f} orders (every type, Devnet A to "
            f"Devnet B, 1 s blocks) executed; from the payment's receipt to `filledAt`: median "
            f"{settlement['median']:.1f} s (target <= {SETTLE_MEDIAN_TARGET:.0f}: "
            f"{'met' if settlement['median'] <= SETTLE_MEDIAN_TARGET else 'MISSED'}), worst "
            f"{settlement['worst']:.1f} s (target <= {SETTLE_WORST_TARGET:.0f}: "
            f"{'met' if settlement['worst'] <= SETTLE_WORST_TARGET else 'MISSED'})."
        )
        lines.append("")
        lines.append(f"Reconciliation after it ({settlement['reconcile_ms']:.0f} ms for both devnets):")
        lines.append("")
        lines += ["    " + line for line in settlement["reconcile"]]
        scale = settlement["at_scale"]
        lines.append("")
        lines.append(
            f"Reconciliation of Devnet A with {scale['orders']:,} more settled orders in its ledger "
            f"({scale['postings']:,} postings, {scale['entries']:,} entries on the chain): {scale['ms']:.0f} ms, "
            f"differences: {scale['differences']}."
        )
    table = "\n".join(lines)
    print(table)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    (ROOT / "docs" / "benchmarks.md").write_text(
        "# Benchmarks\n\n"
        "Measured by `make bench` (tests/benchmarks/http_bench.py): gunicorn with `config/gunicorn_conf.py` as "
        "`make run` starts it (gthread, 2 processes x 8 threads; no access log) on PostgreSQL + Redis, wrk with "
        f"{CONNECTIONS} connections for {DURATION} per endpoint, a bare Django JSON view on the same settings "
        "and server in the same run, and that view making one indexed query (the floor of a database-backed "
        "read). Ratios are to each; targets are against the one-query view. The fan-out runs the webhook workers as `make run` "
        f"does, with a receiver in its own process. Machine: {machine}. What the figures mean, and what stands in "
        f"the way of the targets: [performance.md](performance.md).\n\n{table}\n"
    )


if __name__ == "__main__":
    main()
