"""What `/metrics` reads of the chains (observability.collector): the outbox's transactions in flight and
failed, each chain's watcher, RPC nodes and signers' gas, and the open incidents."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Min
from prometheus_client.core import Metric

from chains.models import Chain, ChainCursor, Incident, OutboxTx
from observability.collector import gauge, metric_source


@metric_source
def outbox_transactions(now: datetime) -> Iterator[Metric]:
    in_flight = [OutboxTx.Status.QUEUED, OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST]
    outbox = gauge(
        "checkout_outbox_transactions",
        "The outbox's transactions in flight (queued, signed, broadcast) and failed, by chain, signer and "
        "status.",
        ["chain_id", "signer", "status"],
    )
    outbox_oldest = gauge(
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


@metric_source
def chain_watchers(now: datetime) -> Iterator[Metric]:
    chains = {chain.chain_id: chain for chain in Chain.objects.all()}
    lag_blocks = gauge(
        "checkout_watcher_lag_blocks",
        "Blocks between a chain's head and what its watcher read.",
        ["chain_id"],
    )
    lag_seconds = gauge(
        "checkout_watcher_lag_seconds",
        "Seconds since a chain's watcher last finished a scan.",
        ["chain_id"],
    )
    scan_failing = gauge(
        "checkout_watcher_failing",
        "1 when a chain's last scan failed (no node answered, a reorg...).",
        ["chain_id"],
    )
    nodes = gauge("checkout_rpc_nodes", "A chain's RPC nodes, as configured.", ["chain_id"])
    gas = gauge(
        "checkout_signer_gas_wei",
        "A signer's native balance at its chain's last scan.",
        ["chain_id", "signer"],
    )
    gas_low = gauge(
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


@metric_source
def incidents_open(now: datetime) -> Iterator[Metric]:
    incidents = gauge("checkout_incidents_open", "Incidents staff have not resolved, by kind.", ["kind"])
    for kind in Incident.Kind.values:
        incidents.add_metric([kind], 0)
    for row in (
        Incident.objects.filter(resolved_at__isnull=True).order_by().values("kind").annotate(n=Count("pk"))
    ):
        incidents.add_metric([row["kind"]], row["n"])
    yield incidents
