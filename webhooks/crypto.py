"""Endpoint secrets: generated, encrypted at rest (AES-256-GCM), and used to sign bodies."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from Crypto.Cipher import AES

from core.crypto import master_key
from core.ids import random_base62

VERSION = "v1"


def new_endpoint_secret() -> str:
    return "whsec_" + random_base62(40)


def _key() -> bytes:
    # The master key itself, as before per-purpose keys existed: stored secrets stay readable.
    return master_key()


def encrypt_secret(secret: str) -> str:
    nonce = secrets.token_bytes(12)
    cipher = AES.new(_key(), AES.MODE_GCM, nonce=nonce)
    ciphertext, tag = cipher.encrypt_and_digest(secret.encode())
    return f"{VERSION}:" + base64.urlsafe_b64encode(nonce + ciphertext + tag).decode()


def decrypt_secret(token: str) -> str:
    version, _, encoded = token.partition(":")
    if version != VERSION:
        raise ValueError("unknown secret encryption version")
    raw = base64.urlsafe_b64decode(encoded)
    nonce, ciphertext, tag = raw[:12], raw[12:-16], raw[-16:]
    return AES.new(_key(), AES.MODE_GCM, nonce=nonce).decrypt_and_verify(ciphertext, tag).decode()


def sign(body: bytes, secret: str) -> str:
    """Hex HMAC-SHA256 of the raw body, keyed with the endpoint secret (`X-Service-Signature`)."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
