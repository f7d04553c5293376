"""Encryption at rest: AES-256-GCM under a key from settings, one derived key per purpose.

`ENCRYPTION_KEY` (32 bytes, URL-safe base64) is required in production; in
development a key is derived from SECRET_KEY. Each purpose (`idempotency`,
...) encrypts under its own key, HMAC-derived from the master key, and binds
the purpose as associated data, so a value cannot be moved to another use.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any

from Crypto.Cipher import AES
from django.conf import settings

VERSION = "e1"


def master_key() -> bytes:
    if settings.ENCRYPTION_KEY:
        key = base64.urlsafe_b64decode(settings.ENCRYPTION_KEY)
        if len(key) != 32:
            raise ValueError("ENCRYPTION_KEY must decode to 32 bytes")
        return key
    # Development only (settings refuse to start without the key in production).
    return hashlib.sha256(b"webhook-secrets:" + settings.SECRET_KEY.encode()).digest()


def _key(purpose: str) -> bytes:
    return hmac.new(master_key(), f"purpose:{purpose}".encode(), hashlib.sha256).digest()


def encrypt(plaintext: bytes, *, purpose: str) -> str:
    nonce = secrets.token_bytes(12)
    cipher = AES.new(_key(purpose), AES.MODE_GCM, nonce=nonce)
    cipher.update(purpose.encode())
    ciphertext, tag = cipher.encrypt_and_digest(plaintext)
    return f"{VERSION}:" + base64.urlsafe_b64encode(nonce + ciphertext + tag).decode()


def decrypt(token: str, *, purpose: str) -> bytes:
    version, _, encoded = token.partition(":")
    if version != VERSION:
        raise ValueError("unknown encryption version")
    raw = base64.urlsafe_b64decode(encoded)
    nonce, ciphertext, tag = raw[:12], raw[12:-16], raw[-16:]
    cipher = AES.new(_key(purpose), AES.MODE_GCM, nonce=nonce)
    cipher.update(purpose.encode())
    return cipher.decrypt_and_verify(ciphertext, tag)


def encrypt_json(value: Any, *, purpose: str) -> str:
    return encrypt(json.dumps(value, separators=(",", ":")).encode(), purpose=purpose)


def decrypt_json(token: str, *, purpose: str) -> Any:
    return json.loads(decrypt(token, purpose=purpose))


def blind_index(value: str, *, purpose: str) -> str:
    """A keyed digest of a normalised value (trimmed, case-folded): equal values match, nothing is revealed."""
    normalised = " ".join(value.split()).casefold()
    return hmac.new(_key(f"index:{purpose}"), normalised.encode(), hashlib.sha256).hexdigest()
