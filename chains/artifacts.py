"""The compiled contracts (chains/contracts/artifacts, built by `make contracts` with the pinned solc)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from eth_utils import keccak

ARTIFACTS = Path(__file__).resolve().parent / "contracts" / "artifacts"
# The devnet token is a plain OpenZeppelin ERC-20: its ABI encodes `transfer` and `approve` for any token.
ERC20 = "TestToken"


@cache
def artifact(name: str) -> dict[str, Any]:
    """`{contractName, abi, bytecode, deployedBytecode, compiler}` of one contract."""
    return json.loads((ARTIFACTS / f"{name}.json").read_text())


@cache
def forwarder_init_code_hash() -> bytes:
    """keccak256 of the deposit forwarder's init code, which the factory deploys with CREATE2.

    Taken from the artifact, never configured: with the factory's address and a
    payment's salt it gives the address the factory will deploy, and can sweep.
    """
    return keccak(hexstr=artifact("DepositForwarder")["bytecode"])


@cache
def _codec(name: str):
    from web3 import Web3

    return Web3().eth.contract(abi=artifact(name)["abi"])  # encodes only; never connects


def encode_call(name: str, function: str, *args) -> str:
    """0x-hex calldata of `function(*args)` of the compiled contract `name`."""
    return _codec(name).encode_abi(function, args=list(args))
