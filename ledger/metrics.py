"""What `/metrics` reads of the ledger (observability.collector): each chain's last reconciliation, its
differences, when one was last clean, and what the solver held then."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from prometheus_client.core import Metric

from chains.models import Chain
from ledger.models import ReconcileRun
from observability.collector import gauge, metric_source


@metric_source
def reconciliations(now: datetime) -> Iterator[Metric]:
    chains = list(Chain.objects.values_list("chain_id", flat=True))
    differences = gauge(
        "checkout_reconcile_differences",
        "Rows whose balance on chain is not what the ledger expects, at a chain's last reconciliation not "
        "yet resolved (-1: it could not compare).",
        ["chain_id"],
    )
    clean = gauge(
        "checkout_reconcile_last_clean_timestamp_seconds",
        "When a chain's last reconciliation without a difference ran (Unix time).",
        ["chain_id"],
    )
    inventory = gauge(
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
