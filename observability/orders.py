"""An order's transition, counted once it has committed: how long the order spent in the status it left
and, at its end, how long its settlement took from the confirmed deposit."""

from __future__ import annotations

from datetime import datetime

from observability import metrics

ENDS = {"executed": "executed", "refunded": "refunded"}


def observe_transition(
    order_type: str,
    from_status: str,
    to_status: str,
    since: datetime | None,
    deposit_at: datetime | None,
    at: datetime,
) -> None:
    metrics.order_transitions.labels(order_type, from_status, to_status).inc()
    if since is not None:
        metrics.order_stage_duration.labels(order_type, from_status, to_status).observe(
            max((at - since).total_seconds(), 0.0)
        )
    if to_status in ENDS and deposit_at is not None:
        metrics.order_settlement_duration.labels(order_type, ENDS[to_status]).observe(
            max((at - deposit_at).total_seconds(), 0.0)
        )
