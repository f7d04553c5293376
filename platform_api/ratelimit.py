"""Sliding-window rate limits: at most `limit` requests in any 60 seconds (or another window), atomic across
processes.

Each bucket keeps the times of the requests it allowed in the last 60 seconds;
a request is allowed while fewer than `limit` are kept. Unlike fixed windows,
no 60-second interval, wherever it starts, ever holds more than `limit`
allowed requests (the burst above the limit is 0), and a client that used its
budget learns exactly when the next slot frees.

With REDIS_URL set, a bucket is a sorted set updated by one Lua script (one
round trip, atomic). Without it, a bucket is one database row, read and
written under a row lock in one short transaction; several web processes on
one SQLite or PostgreSQL database still share the limit. Refused requests are
not recorded, so a client that keeps hammering is not locked out for longer.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.db import transaction
from redis.exceptions import RedisError

from core.shared_redis import shared_redis
from platform_api.models import RateLimitBucket

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60


def _clock() -> float:
    return time.time()


def now() -> float:
    """The limits' clock (seconds since the epoch), for callers that reason about the times they keep."""
    return _clock()


@dataclass(frozen=True)
class RateLimitResult:
    allowed: bool
    count: int  # requests counted in the window, this one included when allowed
    limit: int
    retry_after: int  # seconds until the next slot frees (0 when one is free now)
    newest: float | None = None  # when the newest request still in the window was counted

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.count)

    def headers(self) -> dict[str, str]:
        """`X-RateLimit-*`: the limit, what is left of it now, and seconds until a slot frees."""
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.retry_after),
        }


_WINDOW = """
local function window(key, now, span, limit, record, member)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - span)
  local count = redis.call('ZCARD', key)
  local allowed = 0
  if count < limit then
    allowed = 1
    if record == '1' then
      redis.call('ZADD', key, now, member)
      count = count + 1
      redis.call('PEXPIRE', key, math.ceil(span * 1000) + 1000)
    end
  end
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return {allowed, count, oldest[2] or '', newest[2] or ''}
end
"""
_SCRIPT = (
    _WINDOW
    + "return window(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5])"
)
# A stored record (JSON with an `id`) and one request counted in the bucket `ARGV[7] .. id`, in one round trip;
# {nil} when there is no record, a tombstone (ARGV[6]) or one without an id (nothing counted then).
_RECORD_SCRIPT = (
    _WINDOW
    + """
local stored = redis.call('GET', KEYS[1])
if (not stored) or stored == ARGV[6] then return {false} end
local ok, decoded = pcall(cjson.decode, stored)
if (not ok) or type(decoded) ~= 'table' or type(decoded['id']) ~= 'string' then return {false} end
local counted = window(ARGV[7] .. decoded['id'], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), '1', ARGV[5])
return {stored, counted[1], counted[2], counted[3]}
"""
)


def _redis_client():
    client = shared_redis()
    assert client is not None, "rate limits use Redis only with REDIS_URL"
    return client


@lru_cache(maxsize=8)
def _redis_script(url: str, source: str = _SCRIPT):
    return _redis_client().register_script(source)


Counted = tuple[bool, int, float | None, float | None]  # allowed, count, oldest, newest


def _in_redis(bucket: str, limit: int, now: float, record: bool, window: int) -> Counted:
    member = f"{now:.6f}:{time.monotonic_ns()}"  # unique even for hits at the same instant
    allowed, count, oldest, newest = _redis_script(settings.REDIS_URL)(
        keys=[f"ratelimit:{bucket}"], args=[now, window, limit, "1" if record else "0", member]
    )
    return bool(allowed), int(count), float(oldest) if oldest else None, float(newest) if newest else None


def _in_database(bucket: str, limit: int, now: float, record: bool, window: int) -> Counted:
    if not record:  # a peek: one indexed read, no lock, no write
        stored = RateLimitBucket.objects.filter(bucket=bucket).values_list("hits", flat=True).first() or ""
        kept = [h for h in (float(h) for h in stored.split()) if h > now - window]
        return len(kept) < limit, len(kept), min(kept, default=None), max(kept, default=None)
    with transaction.atomic():
        row = RateLimitBucket.objects.select_for_update().filter(bucket=bucket).first()
        if row is None:  # first use: create it (or find the one another process just created), then lock
            RateLimitBucket.objects.bulk_create([RateLimitBucket(bucket=bucket)], ignore_conflicts=True)
            row = RateLimitBucket.objects.select_for_update().get(bucket=bucket)
        hits = [float(h) for h in row.hits.split()]
        kept = [h for h in hits if h > now - window]
        allowed = len(kept) < limit
        if allowed:
            kept.append(now)
        if allowed or len(kept) != len(hits):
            row.hits = " ".join(f"{h:.6f}" for h in kept)
            row.expires_at = max(kept, default=now) + window
            row.save(update_fields=["hits", "expires_at"])
    return allowed, len(kept), min(kept, default=None), max(kept, default=None)


def _check(bucket: str, limit: int, now: float | None, *, record: bool, window: int) -> RateLimitResult:
    now = _clock() if now is None else now
    try:
        backend = _in_redis if settings.REDIS_URL else _in_database
        allowed, count, oldest, newest = backend(bucket, limit, now, record, window)
    except RedisError as exc:  # the database keeps the limit while Redis is down (each counts apart)
        logger.warning("Rate limits fall back to the database: Redis failed (%s)", exc)
        allowed, count, oldest, newest = _in_database(bucket, limit, now, record, window)
    return _result(allowed, count, oldest, limit, now, window=window, newest=newest)


def _result(
    allowed: bool,
    count: int,
    oldest: float | None,
    limit: int,
    now: float,
    *,
    window: int = WINDOW_SECONDS,
    newest: float | None = None,
) -> RateLimitResult:
    full = count >= limit
    retry_after = max(1, math.ceil(oldest + window - now)) if full and oldest is not None else 0
    return RateLimitResult(allowed=allowed, count=count, limit=limit, retry_after=retry_after, newest=newest)


def hit_with_record(
    record_key: str, *, tombstone: bytes, bucket_prefix: str, limit: int, now: float | None = None
) -> tuple[bytes, RateLimitResult] | None:
    """The record stored at `record_key` and one request counted in the bucket `bucket_prefix + its id`, in
    one Redis round trip; None (nothing counted) without a Redis, a record, or when Redis fails."""
    if not settings.REDIS_URL:
        return None
    now = _clock() if now is None else now
    member = f"{now:.6f}:{time.monotonic_ns()}"
    try:
        stored, *counted = _redis_script(settings.REDIS_URL, _RECORD_SCRIPT)(
            keys=[record_key],
            args=[now, WINDOW_SECONDS, limit, "1", member, tombstone, f"ratelimit:{bucket_prefix}"],
        )
    except RedisError as exc:
        logger.warning("Key records and rate limits unavailable in Redis (%s)", exc)
        return None
    if stored is None:
        return None
    allowed, count, oldest = counted
    return stored, _result(bool(allowed), int(count), float(oldest) if oldest else None, limit, now)


def hit(
    bucket: str, limit: int, now: float | None = None, *, window: int = WINDOW_SECONDS
) -> RateLimitResult:
    """Count one request against `bucket` if the last `window` seconds have room; `allowed` says whether
    they had."""
    return _check(bucket, limit, now, record=True, window=window)


def peek(
    bucket: str, limit: int, now: float | None = None, *, window: int = WINDOW_SECONDS
) -> RateLimitResult:
    """Whether a request would be allowed now, without counting one."""
    return _check(bucket, limit, now, record=False, window=window)


def purge_expired_windows(now: float | None = None) -> int:
    """Delete database buckets whose every request has left the window."""
    now = _clock() if now is None else now
    deleted, _ = RateLimitBucket.objects.filter(expires_at__lt=now).delete()
    return deleted
