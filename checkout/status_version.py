"""What lets the hosted page's status poll be answered without the database while nothing changed.

Each session has a version in the shared Redis: a random token, replaced on the commit of every change the
poll would show (its order's status, a deposit recorded or withdrawn, a refund mined, the session expiring
or taking another order). The poll sends it as its ETag; a payer whose `If-None-Match` names the current
version gets 304 from one Redis read. A version is never reused (random, not a counter, so a key that
expired or a Redis that restarted cannot answer 304 for an older state), and it lives VERSION_TTL seconds
from its last change, so even a replacement lost to a Redis error misleads a poll for that long at most.
Without a Redis (the embedded defaults: no state shared between processes), or while it fails, there is no
version and every poll reads the database.
"""

from __future__ import annotations

import contextlib
import logging
import secrets

from django.db import transaction
from redis.exceptions import RedisError

from core.shared_redis import shared_get, shared_redis

logger = logging.getLogger(__name__)
VERSION_TTL = 120


def _key(session_id: str) -> str:
    return f"checkout:status:{session_id}"


def status_version(session_id: str) -> str | None:
    """The session's current version (one Redis read), or None without a Redis. A first one is set when there
    is none, before the caller reads the database: a change committed after that read replaces it."""
    client = shared_redis()
    if client is None:
        return None
    key = _key(session_id)
    try:
        value = client.get(key)
        if value is None:
            client.set(key, secrets.token_hex(8), nx=True, ex=VERSION_TTL)
            value = client.get(key)
    except RedisError as exc:
        logger.warning("Status version of %s unavailable (%s): the poll reads the database", session_id, exc)
        return None
    if not value:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def status_peek(session_id: str) -> str | None:
    """The session's current version if Redis has one; never sets one (the fast path's read)."""
    value = shared_get(_key(session_id))
    return value.decode() if value else None


def status_forget(session_id: str) -> None:
    """Drop the version `status_version` set for an id that names no session."""
    client = shared_redis()
    if client is not None:
        with contextlib.suppress(RedisError):  # else it expires by itself
            client.delete(_key(session_id))


def _replace(session_id: str, version: str) -> None:
    client = shared_redis()
    if client is None:
        return
    for attempt in (1, 2):
        try:
            client.set(_key(session_id), version, ex=VERSION_TTL)
            return
        except RedisError as exc:
            if attempt == 2:
                logger.error(
                    "Status version of %s not replaced (%s): polls may lag up to %s s",
                    session_id,
                    exc,
                    VERSION_TTL,
                )


def status_changed(session_id: str) -> str:
    """What the session's poll shows changed: a new version once the change commits (at once outside a
    transaction), so a poll never caches a state that rolled back. Returns that version: the caller may keep
    what it rendered of the committed state under it (a later change, or a later call in the same
    transaction, sets another)."""
    version = secrets.token_hex(8)
    transaction.on_commit(lambda: _replace(session_id, version))
    return version


# --- what the session's pages show, kept per version ------------------------------------------------------
#
# The poll's body and the deposit page are rendered from the database once per version and kept in Redis
# under it: any process answers a later request for the same version from there. A version is read (and set
# when there is none) before the database, so what is kept under it was read after it was current; a change
# committed after that read replaces the version, and what was kept under the old one is never asked for
# again. The deposit page also shows what has no version (the merchant's branding, the link's name): it is
# kept PAGE_TTL seconds at most.

PAGE_TTL = 30


def _kept_key(session_id: str, version: str, kind: str) -> str:
    return f"checkout:status:{session_id}:{version}:{kind}"


def kept_get(session_id: str, version: str, kind: str) -> bytes | None:
    """What was kept for the session's `version` as `kind` (one Redis read), or None."""
    return shared_get(_kept_key(session_id, version, kind))


def kept_put(session_id: str, version: str, kind: str, value: bytes, *, ttl: int = VERSION_TTL) -> None:
    """Keep `value` for the session's `version` as `kind`; a Redis error loses only the saving."""
    client = shared_redis()
    if client is None:
        return
    with contextlib.suppress(RedisError):
        client.set(_kept_key(session_id, version, kind), value, ex=ttl)
