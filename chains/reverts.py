"""A revert's data in words: `Error(string)`, `Panic(uint256)` and the custom errors of the known contracts.

A node answers a call that would revert with the revert data only; web3.py names `Error(string)` and
panics, but a custom error stays a bare selector (`0x003b2682`). The errors of every compiled contract
(chains/contracts/artifacts, OpenZeppelin's included) are known here, so staff read
`Tournament.AlreadyJoined()` instead; the raw data is always kept beside the words.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from eth_abi import decode
from eth_abi.exceptions import DecodingError
from eth_utils import keccak, to_checksum_address

from chains.artifacts import ARTIFACTS, artifact

ERROR_STRING = bytes.fromhex("08c379a0")  # Error(string)
PANIC = bytes.fromhex("4e487b71")  # Panic(uint256)
# Solidity's panic codes (docs.soliditylang.org, "Panic via assert and Error via require").
PANIC_CODES = {
    0x00: "generic compiler panic",
    0x01: "assert failed",
    0x11: "arithmetic overflow or underflow",
    0x12: "division or modulo by zero",
    0x21: "conversion to an invalid enum value",
    0x22: "incorrectly encoded storage byte array",
    0x31: "pop() on an empty array",
    0x32: "array index out of bounds",
    0x41: "too much memory allocated",
    0x51: "call to a zero-initialized internal function",
}
MAX_REASON = 150  # characters of a reason string
MAX_SHOWN = 300  # characters of raw data kept in a message (a three-word error fits)


@cache
def known_errors() -> dict[bytes, tuple[str, str, list[dict[str, Any]]]]:
    """{selector: (contract names, error name, inputs)} over every compiled contract's ABI."""
    found: dict[bytes, tuple[str, str, list[dict[str, Any]]]] = {}
    for path in sorted(ARTIFACTS.glob("*.json")):
        for entry in artifact(path.stem)["abi"]:
            if entry.get("type") != "error":
                continue
            signature = f"{entry['name']}({','.join(i['type'] for i in entry['inputs'])})"
            selector = keccak(text=signature)[:4]
            if selector in found:  # the same error in several contracts (OpenZeppelin's): name it once
                continue
            found[selector] = (path.stem, entry["name"], entry["inputs"])
    return found


def _shown(value: Any, abi_type: str) -> str:
    if abi_type == "address":
        return to_checksum_address(value)
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, str):
        return repr(value[:MAX_REASON])
    return str(value)


def _raw(data: bytes) -> str:
    text = "0x" + data.hex()
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def describe_revert(data: bytes | str | None) -> str:
    """What a revert says, in words, followed by its raw data: `Tournament.AlreadyJoined() [0x003b2682]`."""
    if isinstance(data, str):
        text = data
        try:
            data = bytes.fromhex(text.removeprefix("0x"))
        except ValueError:
            return text[:MAX_SHOWN]
    if not data:
        return "reverted without a reason"
    selector, body = data[:4], data[4:]
    try:
        if selector == ERROR_STRING:
            (reason,) = decode(["string"], body)
            return f"Error({reason[:MAX_REASON]!r}) [{_raw(data)}]"
        if selector == PANIC:
            (code,) = decode(["uint256"], body)
            return f"Panic(0x{code:02x}: {PANIC_CODES.get(code, 'unknown panic code')}) [{_raw(data)}]"
        if selector in known_errors():
            contract, name, inputs = known_errors()[selector]
            values = decode([i["type"] for i in inputs], body) if inputs else ()
            args = ", ".join(
                f"{i['name']}={_shown(v, i['type'])}" if i["name"] else _shown(v, i["type"])
                for i, v in zip(inputs, values, strict=True)
            )
            return f"{contract}.{name}({args}) [{_raw(data)}]"
    except (DecodingError, ValueError, OverflowError):
        return f"undecodable revert data [{_raw(data)}]"
    return f"unknown custom error {_raw(selector)} [{_raw(data)}]"


def revert_of(exc: Exception) -> str:
    """The words for a web3.py ContractLogicError (its `data` is the revert data, when the node sent it)."""
    data = getattr(exc, "data", None)
    if isinstance(data, str | bytes) and data:
        return describe_revert(data)
    return str(getattr(exc, "message", None) or exc)[:MAX_SHOWN]
