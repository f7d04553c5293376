"""Idempotency-Key handling for platform POST and PATCH requests.

A record is claimed (unique on scope + key) before the request runs and holds
the first response afterwards. A replay of the same request gets that response
back with `Idempotent-Replayed: true`; a different request under the same key,
or one that arrives while the first is still running, gets 409.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.crypto import decrypt_json, encrypt_json
from platform_api.errors import PlatformError
from platform_api.models import IdempotencyRecord

HEADER = "Idempotency-Key"
PURPOSE = "idempotency"
MAX_KEY_LENGTH = 255
# A claim older than this is from a request that died (timeout, crash) and may be taken over.
ABANDONED_AFTER = timedelta(minutes=2)


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: Any


def request_digest(method: str, path: str, data: Any) -> str:
    canonical = json.dumps([method, path, data], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _validate_key(key: str) -> None:
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise PlatformError.invalid_field(
            HEADER, f"The {HEADER} header must be 1 to {MAX_KEY_LENGTH} printable characters."
        )


def claim(*, scope: str, key: str, method: str, path: str, data: Any) -> IdempotencyRecord | StoredResponse:
    """Claim `key` for this request, or return the stored response of an earlier identical one."""
    _validate_key(key)
    digest = request_digest(method, path, data)
    now = timezone.now()
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(
                scope=scope, key=key, method=method, path=path, request_digest=digest, created_at=now
            )
    except IntegrityError:
        pass

    existing = IdempotencyRecord.objects.filter(scope=scope, key=key).first()
    if existing is None:  # deleted between our insert and read (expired or released): claim again
        return claim(scope=scope, key=key, method=method, path=path, data=data)

    expired = existing.created_at <= now - timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_SECONDS)
    abandoned = (
        existing.state == IdempotencyRecord.State.IN_PROGRESS and existing.created_at <= now - ABANDONED_AFTER
    )
    if expired or abandoned:
        # Take the old record over with a conditional update so two racing requests cannot both win.
        taken = IdempotencyRecord.objects.filter(pk=existing.pk, created_at=existing.created_at).update(
            method=method,
            path=path,
            request_digest=digest,
            state=IdempotencyRecord.State.IN_PROGRESS,
            response_status=None,
            response_body_encrypted="",
            created_at=now,
        )
        if taken == 1:
            existing.refresh_from_db()
            return existing
        raise PlatformError.idempotency_conflict(
            "A request with this Idempotency-Key is already in progress; retry later."
        )

    if existing.request_digest != digest:
        raise PlatformError.idempotency_conflict(
            "This Idempotency-Key was already used with a different request (method, path or body). "
            "Use a new key for a new request."
        )
    if existing.state == IdempotencyRecord.State.IN_PROGRESS:
        raise PlatformError.idempotency_conflict(
            "A request with this Idempotency-Key is still in progress; retry after it has finished."
        )
    assert existing.response_status is not None  # completed records always hold their response
    body = (
        decrypt_json(existing.response_body_encrypted, purpose=PURPOSE)
        if existing.response_body_encrypted
        else None
    )
    return StoredResponse(status=existing.response_status, body=body)


def complete(record: IdempotencyRecord, *, status: int, body: Any) -> None:
    """Store the response to replay; a server error releases the key so the client can retry."""
    if status >= 500:
        IdempotencyRecord.objects.filter(pk=record.pk, state=IdempotencyRecord.State.IN_PROGRESS).delete()
        return
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        state=IdempotencyRecord.State.COMPLETED,
        response_status=status,
        response_body_encrypted=encrypt_json(body, purpose=PURPOSE) if body is not None else "",
    )


def purge_expired(now=None) -> int:
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_SECONDS)
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
