"""Hot-path benchmarks: `make bench`. Requests go through the whole Django stack in-process.

Uses its own database (var/bench.sqlite3, or BENCH_DATABASE_URL), prints
median latency, throughput, queries per request and peak Python memory. Not a
test: nothing here asserts a time.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SERVICE_ENV", "development")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["DATABASE_URL"] = os.environ.get(
    "BENCH_DATABASE_URL", f"sqlite:///{ROOT / 'var' / 'bench.sqlite3'}"
)
# One key makes thousands of requests here: lift the limits so they measure work, not 429s.
os.environ["PLATFORM_RATE_LIMIT_PER_MINUTE"] = "100000000"
os.environ["ORDER_WRITE_RATE_LIMIT_PER_MINUTE"] = "100000000"
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, reset_queries  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "300"))
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDC_ARB = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"


def measure(name: str, call, rounds: int = ROUNDS) -> None:
    for _ in range(10):
        call()
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        timings.append(time.perf_counter() - started)
    # Queries and memory in a separate, shorter pass: both instruments slow requests down.
    queries = []
    tracemalloc.start()
    with override_settings(DEBUG=True):
        for _ in range(20):
            reset_queries()
            call()
            queries.append(len(connection.queries))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    median = statistics.median(timings)
    p95 = sorted(timings)[int(len(timings) * 0.95) - 1]
    print(
        f"{name:38} {median * 1000:7.2f} ms {p95 * 1000:7.2f} ms {1 / median:7.0f}/s"
        f" {statistics.mean(queries):5.1f} {peak / 1024:7.0f} KiB"
    )


def main() -> None:
    call_command("migrate", verbosity=0)
    call_command("load_tokens", stdout=open(os.devnull, "w"))  # noqa: SIM115
    from orders.models import Order
    from platform_api.services import api_key_create, organization_get_or_create
    from tests.orders.conftest import order_body

    organization = organization_get_or_create(slug="bench")
    _, raw = api_key_create(organization=organization, name="bench", permissions=["admin"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}", HTTP_HOST="localhost")
    creator = "0x" + "b" * 40
    if Order.objects.filter(creator_address=creator).count() < 100:
        for _ in range(100):
            client.post("/orders", order_body(creatorAddress=creator), content_type="application/json")

    print(f"{'request':38} {'median':>10} {'p95':>10} {'rate':>9} {'queries':>5} {'peak memory':>11}")
    measure("GET /api/v1/api-keys (auth + list)", lambda: client.get("/api/v1/api-keys"))
    measure("GET /api/v1/events?limit=100", lambda: client.get("/api/v1/events?limit=100"))
    measure("GET /orders?creatorAddress (20)", lambda: client.get(f"/orders?creatorAddress={creator}"))
    order_id = Order.objects.filter(creator_address=creator).values_list("pk", flat=True).first()
    measure("GET /orders/{id}", lambda: client.get(f"/orders/{order_id}"))
    measure("GET /chains/8453/tokens?term=us", lambda: client.get("/chains/8453/tokens?term=us"))
    quote = {
        "type": "swap",
        "srcChain": 8453,
        "dstChain": 42161,
        "srcTokenAddress": USDC,
        "dstTokenAddress": USDC_ARB,
        "tradeType": "EXACT_INPUT",
        "amount": "100000000",
    }
    measure(
        "POST /orders/quote (offline)",
        lambda: client.post("/orders/quote", quote, content_type="application/json"),
    )
    measure(
        "POST /orders (swap)",
        lambda: client.post(
            "/orders", order_body(creatorAddress="0x" + "c" * 40), content_type="application/json"
        ),
        rounds=100,
    )


if __name__ == "__main__":
    main()
