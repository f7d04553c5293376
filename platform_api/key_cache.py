"""API keys' records in the shared Redis, so that an authenticated request reads no database row for its key.

`apikey:<digest>` holds what authentication needs of a key (its organization, permissions, expiry, whether
it is active, when it was last used) as JSON, for RECORD_TTL seconds after the database lookup that wrote
it. The database stays the source of truth: a key not in Redis, a Redis that is down or slow, or a record
that does not parse is read from the database as before.

Revocation is immediate. `forget` runs in the revoking transaction's commit hook and replaces the record
with a tombstone (REVOKED) that lives longer than any record, and records are only ever written with NX: a
request that read the key before the revocation committed cannot write it back as active after it. A key
whose record is a tombstone is read from the database, which says it is revoked.
"""

from __future__ import annotations

import contextlib
import json
import logging
from datetime import datetime

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from redis.exceptions import RedisError

from core.shared_redis import shared_get, shared_redis
from platform_api import ratelimit
from platform_api.models import ApiKey, Organization
from platform_api.ratelimit import RateLimitResult

logger = logging.getLogger(__name__)
RECORD_TTL = 300
REVOKED = b"revoked"
FIELDS = (
    "id",
    "organization_id",
    "name",
    "key_prefix",
    "permissions",
    "expires_at",
    "is_active",
    "revoked_at",
    "last_used_at",
    "created_at",
)
DATES = ("expires_at", "revoked_at", "last_used_at", "created_at")


def _key(digest: str) -> str:
    return f"apikey:{digest}"


def _from_record(raw: bytes | str, digest: str) -> ApiKey | None:
    try:
        record = json.loads(raw) | {"key_digest": digest}
        names = [f.attname for f in ApiKey._meta.concrete_fields]  # from_db takes them in this order
        values = [datetime.fromisoformat(record[n]) if n in DATES and record[n] else record[n] for n in names]
    except (ValueError, KeyError, TypeError):
        return None
    api_key = ApiKey.from_db("default", names, values)
    # Its organization with only its id: a filter by it needs nothing more, and reading any other field
    # loads the row once (Organization.refresh_from_db).
    ApiKey.organization.field.set_cached_value(
        api_key, Organization.from_db("default", ["id"], [record["organization_id"]])
    )
    return api_key


def cached_key(digest: str) -> ApiKey | None:
    """The key whose digest this is, from its record (its organization loaded on first use), or None."""
    raw = shared_get(_key(digest))
    if raw is None or raw == REVOKED:
        return None
    return _from_record(raw, digest)


def cached_key_counting(
    digest: str, *, bucket_prefix: str, limit: int
) -> tuple[ApiKey, RateLimitResult] | None:
    """`cached_key` and the request counted in its key's rate-limit bucket (`bucket_prefix` + the key's id), in
    one Redis round trip; None, with nothing counted, when the record is not there."""
    found = ratelimit.hit_with_record(
        _key(digest), tombstone=REVOKED, bucket_prefix=bucket_prefix, limit=limit
    )
    if found is None:
        return None
    api_key = _from_record(found[0], digest)
    return (api_key, found[1]) if api_key is not None else None


def _record(api_key: ApiKey) -> str:
    return json.dumps(
        {f: (v.isoformat() if isinstance(v, datetime) else v) for f in FIELDS for v in (getattr(api_key, f),)}
    )


def remember(api_key: ApiKey) -> None:
    """Write the record of a key just read from the database, unless one (or a tombstone) is there."""
    client = shared_redis()
    if client is None:
        return
    with contextlib.suppress(RedisError):  # else the next request reads the database again
        client.set(_key(api_key.key_digest), _record(api_key), nx=True, ex=RECORD_TTL)


_REPLACE_UNLESS_REVOKED = """
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) end
return 1
"""


def refresh(api_key: ApiKey) -> None:
    """The key's row changed in a way its record shows (its last use, its name): its record becomes the
    instance's now and again after the commit (a request may have written the row's old state back
    meanwhile). Never replaces a tombstone (one atomic script); an inactive key's record is dropped."""
    client = shared_redis()
    if client is None:
        return
    record = _record(api_key) if api_key.is_active else ""

    def replace() -> None:
        with contextlib.suppress(RedisError):  # else it expires by itself
            client.eval(_REPLACE_UNLESS_REVOKED, 1, _key(api_key.key_digest), REVOKED, record, RECORD_TTL)

    replace()
    transaction.on_commit(replace)


def forget(api_key: ApiKey) -> None:
    """The key was revoked: its record becomes a tombstone now (no request writes it back while the
    revocation commits) and again on the commit, so no request authenticates it from Redis again. A Redis
    that cannot be told does not hold the revocation back: it is logged, and the record expires within
    RECORD_TTL seconds."""
    client = shared_redis()
    if client is None:
        return
    key = _key(api_key.key_digest)

    def tombstone() -> None:
        for attempt in (1, 2):
            try:
                client.set(key, REVOKED, ex=RECORD_TTL * 4)
                return
            except RedisError as exc:
                if attempt == 2:
                    logger.error(
                        "API key %s revoked, but its record could not be replaced (%s): it expires within %s s",
                        api_key.pk,
                        exc,
                        RECORD_TTL,
                    )

    tombstone()
    transaction.on_commit(tombstone)


@receiver(post_save, sender=ApiKey, dispatch_uid="api_key_record_saved")
def on_saved(sender, instance: ApiKey, created: bool, **_) -> None:
    if not created:
        refresh(instance)


@receiver(post_delete, sender=ApiKey, dispatch_uid="api_key_record_deleted")
def on_deleted(sender, instance: ApiKey, **_) -> None:
    forget(instance)
