"""What a scan reads from a chain: ERC-20 `Transfer` logs and top-level native transfers to the watched
addresses, numbered so that a transaction a reorg moved to another block is still the same deposit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from eth_utils import keccak
from web3 import Web3
from web3.types import RPCEndpoint

from chains.evm import ZERO_ADDRESS

TRANSFER_TOPIC = "0x" + keccak(b"Transfer(address,address,uint256)").hex()


@dataclass(frozen=True)
class Transfer:
    tx_hash: str
    seq: int  # its place among the transaction's transfers of this token to this address
    log_index: int
    block_number: int
    block_hash: str
    from_address: str
    to_address: str
    token: str
    amount: int


def hex_str(value) -> str:
    return value.to_0x_hex() if hasattr(value, "to_0x_hex") else str(value)


class RequestCounter:
    """Counts HTTP requests to the node (a JSON-RPC batch is one)."""

    def __init__(self) -> None:
        self.requests = 0


class ReorgDuringScan(RuntimeError):
    """A log came from a block that is not the one read at its height: the chain moved while the scan ran."""


def numbered(transfers: list[dict[str, Any]]) -> list[Transfer]:
    """Transfers with their `seq`: their order, by log index, among the transaction's transfers of the same
    token to the same address."""
    seen: dict[tuple[str, str, str], int] = {}
    numbered = []
    for fields in sorted(transfers, key=lambda t: (t["block_number"], t["log_index"])):
        key = (fields["tx_hash"], fields["to_address"], fields["token"])
        seen[key] = seen.get(key, -1) + 1
        numbered.append(Transfer(seq=seen[key], **fields))
    return numbered


def token_transfers(
    w3: Web3, start: int, end: int, addresses: list[str], counter: RequestCounter
) -> list[dict[str, Any]]:
    """ERC-20 transfers to the addresses in blocks start..end, in one `eth_getLogs` however many are watched:
    up to WATCHER_ADDRESSES_PER_QUERY, the node filters by recipient; above that, every `Transfer` of the range
    is read and matched here against the watched set (a few thousand logs a block on a busy chain, against
    one query per few hundred addresses). Every token is read, listed or not: an unlisted one is held for
    staff, never lost from sight."""
    watched = {a.lower() for a in addresses}
    topics: list[Any] = [TRANSFER_TOPIC]
    if len(addresses) <= settings.WATCHER_ADDRESSES_PER_QUERY:
        topics += [None, ["0x" + "00" * 12 + a[2:] for a in sorted(watched)]]
    counter.requests += 1
    logs = w3.eth.get_logs({"fromBlock": start, "toBlock": end, "topics": topics})
    found = []
    for log in logs:
        if len(log["topics"]) != 3:  # ERC-721 shares the signature, with the token id indexed too
            continue
        to = "0x" + bytes(log["topics"][2])[-20:].hex()
        if to not in watched:
            continue
        found.append(
            {
                "tx_hash": hex_str(log["transactionHash"]),
                "log_index": log["logIndex"],
                "block_number": log["blockNumber"],
                "block_hash": hex_str(log["blockHash"]),
                "from_address": Web3.to_checksum_address("0x" + bytes(log["topics"][1])[-20:].hex()),
                "to_address": Web3.to_checksum_address(to),
                "token": Web3.to_checksum_address(log["address"]),
                "amount": int.from_bytes(bytes(log["data"]), "big"),
            }
        )
    return found


def read_blocks(w3: Web3, start: int, end: int, counter: RequestCounter) -> list[dict[str, Any]]:
    """The blocks `start`..`end` with their transactions, in one JSON-RPC batch, as the scan needs them:
    `number`, `hash` and each transaction's `hash`, `from`, `to` (None for a creation) and `value`, as the node
    sent them (no web3.py formatting of every field of every transaction: a burst's block is hundreds of
    checksummed addresses the scan never reads). A block the node does not have, or an answer of the wrong
    shape, raises."""
    counter.requests += 1
    calls = [(RPCEndpoint("eth_getBlockByNumber"), [hex(number), True]) for number in range(start, end + 1)]
    answers = cast(Any, w3.provider).make_batch_request(calls)
    if not isinstance(answers, list) or len(answers) != len(calls):
        raise ValueError(f"eth_getBlockByNumber batch: {len(calls)} asked, not one answer each")
    blocks = []
    for number, answer in zip(range(start, end + 1), answers, strict=True):
        block = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(block, dict) or int(block.get("number", "0x0"), 16) != number:
            raise ValueError(f"block {number}: {str(answer)[:120]}")
        blocks.append(
            {
                "number": number,
                "hash": block["hash"],
                "transactions": [
                    {
                        "hash": tx["hash"],
                        "from": tx["from"],
                        "to": tx.get("to"),
                        "value": int(tx["value"], 16),
                    }
                    for tx in block["transactions"]
                ],
            }
        )
    return blocks


def native_transfers(
    blocks: list[Any], w3: Web3, addresses: set[str], counter: RequestCounter
) -> list[dict[str, Any]]:
    candidates = [
        (block, tx)
        for block in blocks
        for tx in block["transactions"]
        if tx.get("to") and tx["to"].lower() in addresses and tx["value"] > 0
    ]
    if not candidates:
        return []
    counter.requests += 1
    with w3.batch_requests() as batch:
        for _, tx in candidates:
            batch.add(w3.eth.get_transaction_receipt(tx["hash"]))
        receipts: list[Any] = list(batch.execute())
    return [
        {
            "tx_hash": hex_str(tx["hash"]),
            "log_index": -1,
            "block_number": block["number"],
            "block_hash": hex_str(block["hash"]),
            "from_address": Web3.to_checksum_address(tx["from"]),
            "to_address": Web3.to_checksum_address(tx["to"]),
            "token": ZERO_ADDRESS,
            "amount": tx["value"],
        }
        for (block, tx), receipt in zip(candidates, receipts, strict=True)
        if receipt["status"] == 1
    ]
