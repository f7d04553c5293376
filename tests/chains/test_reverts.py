"""Revert data in words: Error(string), Panic(uint256) and the known contracts' custom errors, raw data kept."""

from __future__ import annotations

from eth_abi import encode
from eth_utils import keccak

from chains.reverts import describe_revert


def _selector(signature: str) -> bytes:
    return keccak(text=signature)[:4]


def test_error_string_is_its_reason():
    data = bytes.fromhex("08c379a0") + encode(["string"], ["not enough"])
    assert describe_revert(data).startswith("Error('not enough') [0x08c379a0")


def test_a_panic_is_named_by_its_code():
    data = bytes.fromhex("4e487b71") + encode(["uint256"], [0x11])
    assert describe_revert("0x" + data.hex()).startswith(
        "Panic(0x11: arithmetic overflow or underflow) [0x4e487b71"
    )


def test_a_known_contracts_custom_error_is_named_with_its_arguments():
    assert describe_revert("0x003b2682") == "Tournament.AlreadyJoined() [0x003b2682]"
    data = _selector("ERC20InsufficientBalance(address,uint256,uint256)") + encode(
        ["address", "uint256", "uint256"], ["0x" + "ab" * 20, 5, 7]
    )
    words = describe_revert(data)
    assert words.startswith(
        "StableToken.ERC20InsufficientBalance(sender=0xABaBaBaBABabABabAbAbABAbABabababaBaBABaB, balance=5, needed=7)"
    )
    assert words.endswith(f"[0x{data.hex()}]")


def test_unknown_or_broken_data_keeps_the_raw_bytes():
    assert describe_revert("0xdeadbeef") == "unknown custom error 0xdeadbeef [0xdeadbeef]"
    assert describe_revert("0x4e487b7101") == "undecodable revert data [0x4e487b7101]"
    assert describe_revert("0x") == "reverted without a reason"
    long = describe_revert("0xdeadbeef" + "00" * 500)
    assert long.endswith("...]") and len(long) < 400
