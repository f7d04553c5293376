"""What `/metrics` reads when Prometheus scrapes: the state of the money path, from the database (and the
broker's queue lengths), as gauges.

Every query is an aggregate on an index (orders not ended, transactions in flight or failed, open
incidents) or reads a row per chain, so a scrape costs the same with a million orders as with ten. A
database that does not answer within METRICS_DATABASE_TIMEOUT_MS (or at all) leaves these out and sets
`checkout_metrics_database_up` to 0: the scrape still answers, with what the processes counted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


class ServiceCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        started = time.monotonic()
        up = _gauge("checkout_metrics_database_up", "1 when this scrape could read the database.", [])
        try:
            families = list(_from_database())
        except DatabaseError as exc:
            logger.warning("metrics: the database did not answer the scrape: %s", exc.__class__.__name__)
            families = []
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
        yield up
        yield from families
        yield from _queues()
        took = _gauge("checkout_metrics_scrape_duration_seconds", "How long this scrape's reads took.", [])
        took.add_metric([], time.monotonic() - started)
        yield took


def _from_database() -> Iterator[Metric]:
    from chains.models import Chain, ChainCursor, Incident, OutboxTx
    from ledger.models import ReconcileRun
    from orders.lifecycle import TERMINAL
    from orders.models import Order

    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as sql:
                sql.execute(
                    "SET LOCAL statement_timeout = %s", [str(int(settings.METRICS_DATABASE_TIMEOUT_MS))]
                )
        now = timezone.now()
        open_statuses = [status for status in Order.Status.values if status not in TERMINAL]
        orders = _gauge("checkout_orders_open", "Orders not ended, by status and type.", ["status", "type"])
        oldest = _gauge(
            "checkout_orders_oldest_status_seconds",
            "How long the longest-waiting order not ended has been in its status, by status.",
            ["status"],
        )
        since: dict[str, datetime] = {}
        for row in (  # one read: counts by status and type, and each status's longest wait from them
            Order.objects.filter(status__in=open_statuses)
            .order_by()
            .values("status", "type")
            .annotate(n=Count("pk"), since=Min("status_changed_at"))
        ):
            orders.add_metric([row["status"], row["type"]], row["n"])
            since[row["status"]] = min(since.get(row["status"], row["since"]), row["since"])
        for status, first in since.items():
            oldest.add_metric([status], (now - first).total_seconds())
        yield orders
        yield oldest

        in_flight = [OutboxTx.Status.QUEUED, OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST]
        outbox = _gauge(
            "checkout_outbox_transactions",
            "The outbox's transactions in flight (queued, signed, broadcast) and failed, by chain, signer and "
            "status.",
            ["chain_id", "signer", "status"],
        )
        outbox_oldest = _gauge(
            "checkout_outbox_oldest_in_flight_seconds",
            "Age of the oldest transaction still in flight, by chain and signer.",
            ["chain_id", "signer"],
        )
        first_sent: dict[tuple[str, str], datetime] = {}
        for row in (  # one read: counts by status, and each sender role's oldest from them
            OutboxTx.objects.filter(status__in=in_flight)
            .order_by()
            .values("chain_id", "signer", "status")
            .annotate(n=Count("pk"), since=Min("created_at"))
        ):
            key = (str(row["chain_id"]), row["signer"])
            outbox.add_metric([*key, row["status"]], row["n"])
            first_sent[key] = min(first_sent.get(key, row["since"]), row["since"])
        for key, first in first_sent.items():
            outbox_oldest.add_metric(list(key), (now - first).total_seconds())
        for row in (
            OutboxTx.objects.filter(status=OutboxTx.Status.FAILED)
            .order_by()
            .values("chain_id", "signer")
            .annotate(n=Count("pk"))
        ):
            outbox.add_metric([str(row["chain_id"]), row["signer"], "failed"], row["n"])
        yield outbox
        yield outbox_oldest

        chains = {chain.chain_id: chain for chain in Chain.objects.all()}
        lag_blocks = _gauge(
            "checkout_watcher_lag_blocks",
            "Blocks between a chain's head and what its watcher read.",
            ["chain_id"],
        )
        lag_seconds = _gauge(
            "checkout_watcher_lag_seconds",
            "Seconds since a chain's watcher last finished a scan.",
            ["chain_id"],
        )
        scan_failing = _gauge(
            "checkout_watcher_failing",
            "1 when a chain's last scan failed (no node answered, a reorg...).",
            ["chain_id"],
        )
        nodes = _gauge("checkout_rpc_nodes", "A chain's RPC nodes, as configured.", ["chain_id"])
        gas = _gauge(
            "checkout_signer_gas_wei",
            "A signer's native balance at its chain's last scan.",
            ["chain_id", "signer"],
        )
        gas_low = _gauge(
            "checkout_signer_gas_threshold_wei",
            "The balance below which a signer's gas is low (0: no threshold).",
            ["chain_id", "signer"],
        )
        cursors = {cursor.chain_id: cursor for cursor in ChainCursor.objects.all()}
        for chain_id, chain in chains.items():
            label = str(chain_id)
            nodes.add_metric([label], len(chain.rpc_urls or []))
            gas_low.add_metric([label, "vault"], float(int(chain.vault_gas_threshold)))
            gas_low.add_metric([label, "solver"], float(int(chain.solver_gas_threshold)))
            cursor = cursors.get(chain_id)
            if cursor is None:
                continue
            if cursor.lag is not None:
                lag_blocks.add_metric([label], max(cursor.lag, 0))
            if cursor.last_scan_at is not None:
                lag_seconds.add_metric([label], (now - cursor.last_scan_at).total_seconds())
            scan_failing.add_metric([label], 1 if cursor.last_error else 0)
            for role, balance in (cursor.gas or {}).items():
                if role in ("vault", "solver"):
                    gas.add_metric([label, role], float(int(balance)))
        yield from (lag_blocks, lag_seconds, scan_failing, nodes, gas, gas_low)

        incidents = _gauge("checkout_incidents_open", "Incidents staff have not resolved, by kind.", ["kind"])
        for kind in Incident.Kind.values:
            incidents.add_metric([kind], 0)
        for row in (
            Incident.objects.filter(resolved_at__isnull=True)
            .order_by()
            .values("kind")
            .annotate(n=Count("pk"))
        ):
            incidents.add_metric([row["kind"]], row["n"])
        yield incidents

        differences = _gauge(
            "checkout_reconcile_differences",
            "Rows whose balance on chain is not what the ledger expects, at a chain's last reconciliation not "
            "yet resolved (-1: it could not compare).",
            ["chain_id"],
        )
        clean = _gauge(
            "checkout_reconcile_last_clean_timestamp_seconds",
            "When a chain's last reconciliation without a difference ran (Unix time).",
            ["chain_id"],
        )
        inventory = _gauge(
            "checkout_inventory_balance",
            "What the solver held of a token at a chain's last reconciliation, in the token's smallest unit.",
            ["chain_id", "token"],
        )
        for chain_id in chains:
            runs = ReconcileRun.objects.filter(chain_id=chain_id).order_by("-created_at")
            last = runs.only("differences", "error", "resolved_at", "rows").first()
            if last is None:
                continue
            label = str(chain_id)
            unresolved = last.resolved_at is None
            differences.add_metric([label], -1 if last.error else (last.differences if unresolved else 0))
            for row in last.rows or []:
                if row.get("kind") == "solver" and row.get("actual") not in (None, ""):
                    inventory.add_metric([label, str(row.get("token", ""))[:20]], float(int(row["actual"])))
            last_clean = runs.filter(differences=0, error="").values_list("created_at", flat=True).first()
            if last_clean is not None:
                clean.add_metric([label], last_clean.timestamp())
        yield from (differences, clean, inventory)


def _queues() -> Iterator[Metric]:
    """Messages waiting in each of the service's Celery queues (Redis or the file broker)."""
    queues = sorted(
        {settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_WEBHOOK_QUEUE, settings.CELERY_CHAIN_QUEUE}
    )
    family = _gauge("checkout_celery_queue_length", "Messages waiting in a Celery queue.", ["queue"])
    broker = settings.CELERY_BROKER_URL
    try:
        if broker.startswith(("redis://", "rediss://")):
            import redis

            client = redis.Redis.from_url(broker, socket_timeout=1, socket_connect_timeout=1)
            separator = "\x06\x16"  # kombu's priority queues: "<queue>", then "<queue>\x06\x16<priority>"
            for queue in queues:
                keys = [queue] + [f"{queue}{separator}{priority}" for priority in range(1, 10)]
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.llen(key)
                family.add_metric([queue], sum(pipe.execute()))
        elif broker == "filesystem://":
            folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))
            for queue in queues:
                family.add_metric([queue], sum(1 for _ in folder.glob(f"*.{queue}.msg")))
    except Exception as exc:  # a broker that does not answer: no queue lengths in this scrape
        logger.warning("metrics: the broker did not answer the scrape: %s", exc.__class__.__name__)
        return
    yield family
