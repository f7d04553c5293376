"""Every write of the platform core: organizations and API keys."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import Forbidden
from core.ids import random_base62
from platform_api import key_cache
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.errors import PlatformError
from platform_api.models import TEST_API_KEY_PREFIX, ApiKey, Organization, Permission
from platform_api.signals import record_write

API_KEY_PREFIX = "svc_live_"
API_KEY_RANDOM_LENGTH = 40  # ~238 bits
API_KEY_DISPLAY_LENGTH = len(API_KEY_PREFIX) + 6
MAX_PRESENTED_KEY_LENGTH = 200


def api_key_digest(raw_key: str) -> str:
    # A fast hash is right here: the key has ~238 random bits, so it cannot be
    # brute-forced, and authentication must stay one cheap indexed lookup.
    return hashlib.sha256(raw_key.encode()).hexdigest()


def organization_get_or_create(*, slug: str, name: str | None = None) -> Organization:
    organization, _ = Organization.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return organization


@transaction.atomic
def api_key_create(
    *,
    organization: Organization,
    name: str,
    permissions: list[str],
    expires_at: datetime | None = None,
    ctx: RequestContext | None = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with the full secret, which is never stored and never shown again."""
    unknown = set(permissions) - set(Permission.values)
    if not permissions or unknown:
        raise ValueError(f"permissions must be a non-empty subset of {Permission.values}")
    if ctx is not None and not all(ctx.allows(p) for p in permissions):
        raise Forbidden(
            f"You may make keys with the '{ctx.permission}' permission at most.", field="permissions"
        )
    prefix = API_KEY_PREFIX if organization.livemode else TEST_API_KEY_PREFIX
    raw_key = prefix + random_base62(API_KEY_RANDOM_LENGTH)
    api_key = ApiKey.objects.create(
        organization=organization,
        name=name,
        permissions=sorted(set(permissions), key=Permission.values.index),
        expires_at=expires_at,
        key_prefix=raw_key[:API_KEY_DISPLAY_LENGTH],
        key_digest=api_key_digest(raw_key),
    )
    if ctx is not None:
        record_write(
            ctx=ctx,
            event_type=AuditName.API_KEY_CREATED,
            resource_type="api_key",
            resource_id=api_key.id,
            created=True,
        )
    return api_key, raw_key


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey, ctx: RequestContext | None = None) -> ApiKey:
    """Revoke a key for good; it stops authenticating at once. Revoking twice is a no-op. One acting with
    less than the key's permissions may not revoke it (a developer, an owner's production key)."""
    if ctx is not None and not ctx.allows(api_key.highest_permission):
        raise Forbidden(f"Revoking a key with the '{api_key.highest_permission}' permission needs that much.")
    now = timezone.now()
    revoked = ApiKey.objects.filter(pk=api_key.pk, is_active=True).update(is_active=False, revoked_at=now)
    if revoked:
        key_cache.forget(api_key)
    if revoked and ctx is not None:
        record_write(
            ctx=ctx,
            event_type=AuditName.API_KEY_REVOKED,
            resource_type="api_key",
            resource_id=api_key.id,
        )
    api_key.refresh_from_db(fields=["is_active", "revoked_at"])
    return api_key


def api_key_authenticate(*, raw_key: str | None, counted_in: tuple[str, int] | None = None) -> ApiKey:
    """The active key matching `raw_key`: its record in Redis, or one indexed lookup on the digest; no
    password hasher. With `counted_in` (a bucket prefix and a limit), the request is counted in the key's
    bucket (prefix + the key's id) in the same Redis round trip when its record is there, and
    `api_key.counted` is the rate-limit result (None when not counted here: the caller counts)."""
    if not raw_key:
        raise PlatformError.authentication(
            "key_missing", "No API key: send it as 'Authorization: Bearer <key>' or 'X-API-Key: <key>'."
        )
    invalid = PlatformError.authentication("key_invalid", "The API key is not valid.")
    if (
        not raw_key.startswith((API_KEY_PREFIX, TEST_API_KEY_PREFIX))
        or len(raw_key) > MAX_PRESENTED_KEY_LENGTH
    ):
        raise invalid
    digest = api_key_digest(raw_key)
    counted = None
    if counted_in is not None:
        found = key_cache.cached_key_counting(digest, bucket_prefix=counted_in[0], limit=counted_in[1])
        api_key, counted = found if found is not None else (None, None)
    else:
        api_key = key_cache.cached_key(digest)
    if api_key is None:
        api_key = ApiKey.objects.select_related("organization").filter(key_digest=digest).first()
        if api_key is None or not hmac.compare_digest(api_key.key_digest, digest):
            raise invalid
        if api_key.is_active:
            key_cache.remember(api_key)
    now = timezone.now()
    api_key_ensure_usable(api_key, now)
    _touch_last_used(api_key, now)
    api_key.counted = counted
    return api_key


def api_key_ensure_usable(api_key: ApiKey, now: datetime) -> None:
    """401 for a key revoked or expired (the request that presented it, or one still waiting on it)."""
    if not api_key.is_active:
        raise PlatformError.authentication("key_revoked", "This API key has been revoked.")
    if api_key.is_expired(now):
        raise PlatformError.authentication("key_expired", "This API key has expired.")


def api_key_recheck(api_key: ApiKey) -> None:
    """The key read again from the database, as it stands now: a long request ends when it is revoked."""
    current = ApiKey.objects.filter(pk=api_key.pk).first()
    if current is None:
        raise PlatformError.authentication("key_revoked", "This API key has been revoked.")
    api_key_ensure_usable(current, timezone.now())


def _touch_last_used(api_key: ApiKey, now: datetime) -> None:
    # At most one write a minute per key, and a conditional one, so concurrent
    # requests do not all write the same row.
    resolution = timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION_SECONDS)
    if api_key.last_used_at is not None and api_key.last_used_at > now - resolution:
        return
    ApiKey.objects.filter(pk=api_key.pk, last_used_at=api_key.last_used_at).update(last_used_at=now)
    api_key.last_used_at = now
    key_cache.refresh(api_key)  # its record says when it was last used
