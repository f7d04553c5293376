"""A read whose database connection turns out to be dead is run once more on a new connection.

The web process keeps its PostgreSQL connections between requests
(`DATABASE_CONN_MAX_AGE`). Django can check each one before a request's first
query (`CONN_HEALTH_CHECKS`, a `SELECT 1` round trip per request); the web
process does not (issue 46: the check cost as much as a hot read's own query).
Instead, a safe request (GET, HEAD, OPTIONS) whose view fails because the
connection was lost (PostgreSQL restarted, a proxy cut an idle connection) is
answered by running the view again on a new connection. Writes are never run
twice: they answer 500 as before, and the next request reconnects. Workers,
beat and commands keep the health check: they run money-moving tasks, not
reads.
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def connection_lost(exc: BaseException) -> bool:
    """True when `exc` came from a connection that no longer works, outside any transaction."""
    if not isinstance(exc, OperationalError | InterfaceError) or connection.in_atomic_block:
        return False
    return not connection.is_usable()


class RetryReadOnLostConnection:
    """Runs a safe request's view once more when its connection was lost (see the module)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method not in SAFE_METHODS or connection.settings_dict.get("CONN_HEALTH_CHECKS"):
            return None
        try:
            return view_func(request, *view_args, **view_kwargs)
        except (OperationalError, InterfaceError) as exc:
            if not connection_lost(exc):
                raise
            logger.warning("The database connection was lost; %s %s runs again", request.method, request.path)
            connection.close()
            return view_func(request, *view_args, **view_kwargs)
