"""What `/metrics` reads of the orders (observability.collector): those not ended, by status and type, and how
long the longest-waiting has been in its status."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Min
from prometheus_client.core import Metric

from observability.collector import gauge, metric_source
from orders.lifecycle import TERMINAL
from orders.models import Order


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
