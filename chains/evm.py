"""EVM primitives: address checks, EIP-55 checksums and CREATE2 deposit addresses."""

from __future__ import annotations

import re

from Crypto.Hash import keccak

ADDRESS_RE = re.compile(r"^0x[0-9a-fA-F]{40}$")


def is_address(value: object) -> bool:
    return isinstance(value, str) and ADDRESS_RE.fullmatch(value) is not None


def keccak256(data: bytes) -> bytes:
    return keccak.new(digest_bits=256, data=data).digest()


def to_checksum_address(address: str) -> str:
    """EIP-55 mixed-case checksum encoding of a 20-byte hex address."""
    if not is_address(address):
        raise ValueError(f"not an address: {address!r}")
    lower = address[2:].lower()
    hashed = keccak256(lower.encode()).hex()
    return "0x" + "".join(c.upper() if int(hashed[i], 16) >= 8 else c for i, c in enumerate(lower))


def create2_address(*, factory: str, salt: bytes, init_code_hash: bytes) -> str:
    """The address a contract gets when `factory` deploys it with CREATE2 (EIP-1014)."""
    if len(salt) != 32 or len(init_code_hash) != 32:
        raise ValueError("salt and init code hash must be 32 bytes")
    digest = keccak256(b"\xff" + bytes.fromhex(factory[2:]) + salt + init_code_hash)
    return to_checksum_address("0x" + digest[12:].hex())


def deposit_address_for(*, kind: str, identifier: str) -> str:
    """The service-owned deposit address of one payment (an order or a quick payment).

    It is the CREATE2 address of a minimal forwarder that the service's factory
    deploys on demand with salt keccak256("<kind>:<identifier>"); only the
    factory's owner (the service) can deploy it and sweep what it received.
    Deterministic, so it can be recomputed from the id at any time.
    """
    from django.conf import settings

    return create2_address(
        factory=settings.DEPOSIT_FACTORY_ADDRESS,
        salt=keccak256(f"{kind}:{identifier}".encode()),
        init_code_hash=bytes.fromhex(settings.DEPOSIT_FORWARDER_INIT_CODE_HASH[2:]),
    )
