"""What `/metrics` reads of the orders (observability.collector): those not ended, by status and type, and how
long the longest-waiting has been in its status."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Min
from prometheus_client.core import Metric

from observability.collector import gauge, metric_source
from orders.fast_fills import fast_fills_held
from orders.fronting import exposure_outstanding
from orders.lifecycle import TERMINAL
from orders.models import FastFill, InventoryFront, Order


@metric_source
def orders_open(now: datetime) -> Iterator[Metric]:
    open_statuses = [status for status in Order.Status.values if status not in TERMINAL]
    orders = gauge("checkout_orders_open", "Orders not ended, by status and type.", ["status", "type"])
    oldest = gauge(
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


@metric_source
def exposure_on_sight(now: datetime) -> Iterator[Metric]:
    """What the solver delivered against on first sight and is not yet confirmed, and what was lost so."""
    exposure = gauge(
        "checkout_front_exposure",
        "Delivered from inventory on first sight of payments not yet confirmed, by chain and token paid (the "
        "token's smallest unit).",
        ["chain", "token"],
    )
    for chain, token, amount in exposure_outstanding():
        exposure.add_metric([str(chain), token], amount)
    lost = gauge(
        "checkout_fronts_lost",
        "Deliveries made on first sight whose payment never reached its confirmations (the operator's loss).",
        [],
    )
    lost.add_metric([], InventoryFront.objects.filter(lost_at__isnull=False).count())
    yield exposure
    yield lost


@metric_source
def fast_fill_holds(now: datetime) -> Iterator[Metric]:
    """What the relay provider holds against its fast fills of deposits not yet landed, and what was lost so."""
    holds = gauge(
        "checkout_fast_fill_held",
        "Held by the relay provider against fast fills whose vault deposit has not landed, by origin chain and "
        "token (the token's smallest unit).",
        ["chain", "token"],
    )
    for chain, token, amount in fast_fills_held():
        holds.add_metric([str(chain), token], amount)
    lost = gauge(
        "checkout_fast_fills_lost",
        "Fast fills whose vault deposit never landed (the hold is the operator's loss).",
        [],
    )
    lost.add_metric([], FastFill.objects.filter(lost_at__isnull=False).count())
    yield holds
    yield lost
