"""The deployment's shared Redis (REDIS_URL): what every node must see alike, fast. None without one.

Callers treat it as an accelerator, never as the source of truth: a Redis that is down or slow (a short
socket timeout) makes them fall back to the database, so it can delay nothing by more than that timeout.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings
from redis.exceptions import RedisError

if TYPE_CHECKING:
    import redis

logger = logging.getLogger(__name__)
TIMEOUT_SECONDS = 0.5


@lru_cache(maxsize=1)
def _client(url: str) -> redis.Redis:
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=TIMEOUT_SECONDS, socket_timeout=TIMEOUT_SECONDS)


def shared_redis() -> redis.Redis | None:
    """The client of REDIS_URL, or None when the deployment has no Redis (the embedded defaults)."""
    return _client(settings.REDIS_URL) if settings.REDIS_URL else None


def shared_get(key: str) -> bytes | None:
    """The value at `key`, or None: no Redis, no such key, or a Redis that failed (logged; the caller reads
    the database instead)."""
    client = shared_redis()
    if client is None:
        return None
    try:
        value = client.get(key)
    except RedisError as exc:
        logger.warning("Redis unavailable (%s): read from the database", exc)
        return None
    return value if isinstance(value, bytes) else None
