"""`manage.py`'s answer when a command cannot reach what it needs: one line, not a traceback."""

from __future__ import annotations

import errno


def connection_failure(exc: BaseException) -> str | None:
    """One line naming what could not be reached, when `exc` is a connection failure; else None."""
    import requests

    if isinstance(exc, requests.ConnectionError | requests.Timeout):
        url = getattr(getattr(exc, "request", None), "url", None) or "a service"
        why = "timed out" if isinstance(exc, requests.Timeout) else "connection refused or unreachable"
        return f"cannot reach {url} ({why})"
    if isinstance(exc, ConnectionError | TimeoutError) or (
        isinstance(exc, OSError) and exc.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ETIMEDOUT)
    ):
        return f"cannot connect: {exc.strerror or exc}"
    try:
        import redis
        from django.db import OperationalError
        from kombu.exceptions import OperationalError as BrokerError
    except ImportError:  # pragma: no cover - all three are requirements
        return None
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return f"cannot reach Redis: {str(exc).splitlines()[0][:200]}"
    if isinstance(exc, BrokerError):
        return f"cannot reach the Celery broker: {str(exc).splitlines()[0][:200]}"
    if isinstance(exc, OperationalError) and "connect" in str(exc).lower():
        return f"cannot reach the database: {str(exc).strip().splitlines()[0][:200]}"
    return None
