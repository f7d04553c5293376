"""Public identifiers: a type prefix plus random base62 (`ak_...`, `evt_...`)."""

import secrets
import string

BASE62 = string.digits + string.ascii_letters


def random_base62(length: int) -> str:
    return "".join(secrets.choice(BASE62) for _ in range(length))


def public_id(prefix: str, length: int = 24) -> str:
    """A public id such as `ak_3hX...`; 24 base62 characters carry ~142 bits."""
    return f"{prefix}_{random_base62(length)}"
