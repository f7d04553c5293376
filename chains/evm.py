"""EVM primitives: address checks, EIP-55 checksums and CREATE2 deposit addresses (on eth-utils)."""

from __future__ import annotations

import re

from eth_typing import ChecksumAddress
from eth_utils import keccak
from eth_utils import to_checksum_address as _checksum

from chains.artifacts import forwarder_init_code_hash

ADDRESS_PATTERN = (
    r"^0x[0-9a-fA-F]{40}$"  # the one definition of an address's shape (schemas, searches, fields)
)
ADDRESS_RE = re.compile(ADDRESS_PATTERN)
ZERO_ADDRESS = "0x" + "00" * 20
# The deterministic deployment proxy (CREATE2 with a salt), on nearly every EVM chain and in anvil: what the
# service deploys through it (the deposit factory, the call router) has one address on every chain.
DETERMINISTIC_DEPLOYER = "0x4e59b44847b379578588920cA78FbF26c0B4956C"
# Multicall3 (github.com/mds1/multicall), at the same address on nearly every EVM chain.
MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11"


def deployer_proxy_missing(w3, name: str) -> str | None:
    """Why nothing can be deployed through the deterministic deployment proxy on `name`'s chain, or None."""
    if w3.eth.get_code(DETERMINISTIC_DEPLOYER):
        return None
    return (
        f"{name} has no deterministic deployment proxy at {DETERMINISTIC_DEPLOYER}: "
        "deploy it first with its presigned transaction"
    )


def is_address(value: object) -> bool:
    """0x and 40 hex characters, nothing around them (eth-utils also takes bytes and unprefixed hex)."""
    return isinstance(value, str) and ADDRESS_RE.fullmatch(value) is not None


def keccak256(data: bytes) -> bytes:
    return keccak(data)


def to_checksum_address(address: str) -> ChecksumAddress:
    """EIP-55 mixed-case checksum encoding of a 20-byte hex address."""
    if not is_address(address):
        raise ValueError(f"not an address: {address!r}")
    return _checksum(address)


def create2_address(*, factory: str, salt: bytes, init_code_hash: bytes) -> str:
    """The address a contract gets when `factory` deploys it with CREATE2 (EIP-1014)."""
    if len(salt) != 32 or len(init_code_hash) != 32:
        raise ValueError("salt and init code hash must be 32 bytes")
    digest = keccak(b"\xff" + bytes.fromhex(factory[2:]) + salt + init_code_hash)
    return to_checksum_address("0x" + digest[12:].hex())


def deposit_salt(*, kind: str, identifier: str) -> bytes:
    return keccak(f"{kind}:{identifier}".encode())


def deposit_address_for(*, factory: str, kind: str, identifier: str) -> str:
    """The deposit address of one payment (an order or a quick payment) under a chain's `factory`.

    It is the CREATE2 address of the forwarder (chains/contracts) that the
    factory deploys on demand with salt keccak256("<kind>:<identifier>"); only
    the factory's owner (the service) can deploy it and sweep what it received.
    Deterministic, so it can be recomputed from the id at any time.
    """
    return create2_address(
        factory=factory,
        salt=deposit_salt(kind=kind, identifier=identifier),
        init_code_hash=forwarder_init_code_hash(),
    )
