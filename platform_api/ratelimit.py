"""Fixed-window rate limits, atomic across processes.

With REDIS_URL set, counters live in Redis (INCR + EXPIRE in one pipeline).
Without it, one `INSERT ... ON CONFLICT DO UPDATE ... RETURNING` statement on
the database counts atomically, so several web processes on one SQLite or
PostgreSQL database still share the limit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.db import connection

from platform_api.models import RateLimitCounter

WINDOW_SECONDS = 60


def _clock() -> float:
    return time.time()


@dataclass(frozen=True)
class RateLimitResult:
    allowed: bool
    count: int
    limit: int
    retry_after: int


@lru_cache(maxsize=1)
def _redis_client():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL)


def _count_in_redis(bucket: str, window_start: int) -> int:
    key = f"ratelimit:{bucket}:{window_start}"
    pipe = _redis_client().pipeline(transaction=True)
    pipe.incr(key)
    pipe.expire(key, WINDOW_SECONDS + 5)
    count, _ = pipe.execute()
    return int(count)


def _count_in_database(bucket: str, window_start: int) -> int:
    table = connection.ops.quote_name(RateLimitCounter._meta.db_table)
    sql = (
        f"INSERT INTO {table} (bucket, window_start, count) VALUES (%s, %s, 1) "  # noqa: S608 - table name is ours
        f"ON CONFLICT (bucket, window_start) DO UPDATE SET count = {table}.count + 1 RETURNING count"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [bucket, window_start])
        return int(cursor.fetchone()[0])


def hit(bucket: str, limit: int, now: float | None = None) -> RateLimitResult:
    """Count one request against `bucket`; `allowed` is False once `limit` is passed in this window."""
    now = _clock() if now is None else now
    window_start = int(now // WINDOW_SECONDS) * WINDOW_SECONDS
    count = (
        _count_in_redis(bucket, window_start)
        if settings.REDIS_URL
        else _count_in_database(bucket, window_start)
    )
    retry_after = max(1, math.ceil(window_start + WINDOW_SECONDS - now))
    return RateLimitResult(allowed=count <= limit, count=count, limit=limit, retry_after=retry_after)


def purge_expired_windows(now: float | None = None) -> int:
    """Delete database counters of windows that have ended."""
    now = _clock() if now is None else now
    deleted, _ = RateLimitCounter.objects.filter(window_start__lt=now - WINDOW_SECONDS).delete()
    return deleted
