"""ERC-6492: a signature by a smart wallet that is not deployed yet, and the one call that deploys it and moves
its tokens.

Such a signature is `abi.encode(factory, factoryCalldata, innerSignature) ++ MAGIC`: calling `factory` with
`factoryCalldata` deploys the wallet at its counterfactual address, after which `innerSignature` is its
ERC-1271 signature. A wallet already deployed is checked with the inner signature alone. Deploying and
transferring happen in one transaction through Multicall3 (`aggregate3`), so a transfer that fails leaves no
wallet deployed on the service's gas either.

https://eips.ethereum.org/EIPS/eip-6492
"""

from __future__ import annotations

from dataclasses import dataclass

from eth_abi import decode, encode
from eth_utils import keccak

from chains.evm import to_checksum_address

MAGIC = bytes.fromhex("6492" * 16)
_AGGREGATE3 = keccak(text="aggregate3((address,bool,bytes)[])")[:4].hex()


@dataclass(frozen=True)
class Wrapped:
    factory: str  # checksummed
    factory_data: bytes
    signature: bytes  # the wallet's own (ERC-1271) signature


def unwrap(signature: bytes) -> Wrapped | None:
    """The parts of an ERC-6492 signature, or None for any other (one that ends with the magic bytes but does not
    decode is None too: it is no wallet's signature)."""
    if not signature.endswith(MAGIC):
        return None
    try:
        factory, factory_data, inner = decode(["address", "bytes", "bytes"], signature[: -len(MAGIC)])
    except Exception:  # eth_abi raises several kinds for bytes that are not this encoding
        return None
    return Wrapped(factory=to_checksum_address(factory), factory_data=factory_data, signature=inner)


def deploy_and_call_data(wrapped: Wrapped, *, target: str, data: str, call_may_fail: bool = False) -> str:
    """Multicall3 `aggregate3` call data that calls the wallet's factory (allowed to fail: someone may have
    deployed it meanwhile, and some factories refuse to deploy twice), then `target` with `data`, which must
    succeed for the whole to (unless `call_may_fail`, for a simulation that reads why it failed)."""
    calls = [
        (wrapped.factory, True, wrapped.factory_data),
        (to_checksum_address(target), call_may_fail, bytes.fromhex(data.removeprefix("0x"))),
    ]
    return "0x" + _AGGREGATE3 + encode(["(address,bool,bytes)[]"], [calls]).hex()


def call_outcome(returned: str) -> tuple[bool, str]:
    """(success, its return or revert data as 0x-hex) of the second call, from what `aggregate3` returned;
    ValueError when that is not two results."""
    try:
        (results,) = decode(["(bool,bytes)[]"], bytes.fromhex(returned.removeprefix("0x")))
        success, data = results[1]
    except Exception as exc:  # eth_abi's decoding errors, or fewer results
        raise ValueError(f"not what aggregate3 returns: {exc}") from None
    return bool(success), "0x" + bytes(data).hex()
