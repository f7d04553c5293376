"""Webhook attempts, counted by outcome once their record has committed."""

from __future__ import annotations

from collections.abc import Iterable

from observability import metrics


def outcome(status: int | None, timed_out: bool) -> str:
    if status is not None:
        return "success" if 200 <= status < 300 else "http_error"
    return "timeout" if timed_out else "connection_error"


def observe_attempts(results: Iterable[tuple[int | None, bool, int]]) -> None:
    """`results`: each attempt's (status code or None, timed out, milliseconds)."""
    for status, timed_out, elapsed_ms in results:
        kind = outcome(status, timed_out)
        metrics.webhook_attempts.labels(kind).inc()
        metrics.webhook_attempt_duration.labels(kind).observe(elapsed_ms / 1000)
