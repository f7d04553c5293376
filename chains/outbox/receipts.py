"""Reading what the chain did with an outbox transaction: its receipt and logs, the head, several calls in one
JSON-RPC batch, and why a transaction reverted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from eth_utils import to_checksum_address
from web3 import Web3
from web3._utils.method_formatters import receipt_formatter
from web3.exceptions import ContractLogicError, TransactionNotFound, Web3RPCError

from chains.client import web3_for
from chains.models import OutboxTx
from chains.registry import Chain, chain_get
from chains.reverts import revert_of

logger = logging.getLogger(__name__)


def chain_client(tx: OutboxTx) -> tuple[Chain, Web3]:
    chain = chain_get(tx.chain_id)
    if chain is None:
        raise ValueError(f"chain {tx.chain_id} is not in the registry")
    return chain, web3_for(chain)


def call_of(tx: OutboxTx) -> dict:
    return {"from": tx.sender, "to": tx.to, "data": tx.data, "value": int(tx.value)}


def replayed_revert(w3: Web3, tx: OutboxTx, block_number: int) -> str:
    """Why a mined transaction reverted, by replaying its call on the state before its block (a receipt
    carries no reason); best effort: another transaction of the block may have changed that state."""
    try:
        w3.eth.call({**call_of(tx), "gas": tx.gas_limit}, block_identifier=max(block_number - 1, 0))  # type: ignore[typeddict-item]
    except ContractLogicError as exc:
        return revert_of(exc)
    except (Web3RPCError, ValueError, OSError):
        return "reason unknown (the replay failed)"
    return "reason unknown (the replay succeeds on the state before its block)"


def hex_of(value) -> str:
    return value.to_0x_hex() if hasattr(value, "to_0x_hex") else str(value)


def receipt_logs(receipt) -> list[dict[str, Any]]:
    """The receipt's logs as stored: {address, topics, data} (what the transaction moved, for its owner)."""
    return [
        {
            "address": to_checksum_address(log["address"]),
            "topics": [hex_of(t) for t in log["topics"]],
            "data": hex_of(log["data"]),
        }
        for log in receipt["logs"]
    ]


def receipt_of(w3: Web3, tx: OutboxTx):
    """The receipt of whichever signed version of `tx` is on the chain, or None."""
    for tx_hash in reversed(tx.hashes):
        try:
            return w3.eth.get_transaction_receipt(tx_hash)
        except TransactionNotFound:
            continue
    return None


_read_in_block: dict[int, str] = {}  # tx id -> the hash in a block, while its owner is told (`told_in_block`)


@contextmanager
def told_in_block(tx: OutboxTx, tx_hash: str) -> Iterator[None]:
    """While the owner of `tx` is told it is in a block (a receipt just read: `tx_hash`, successful), the
    owner's own questions (`succeeded_in_block`) are answered from that receipt, not by reading it again: a
    burst's deliveries were each read three times on the way to executing their orders."""
    _read_in_block[tx.pk] = tx_hash
    try:
        yield
    finally:
        _read_in_block.pop(tx.pk, None)


def succeeded_in_block(tx: OutboxTx) -> str | None:
    """The hash of the version of a broadcast transaction that is in a block and succeeded there, before its
    chain's confirmations; None when none is (or no node answers). A reorg may take that block away: the
    transaction is then mined again at its nonce, and its outcome, once confirmed, is recorded as ever."""
    if tx.status != OutboxTx.Status.BROADCAST:
        return None
    if _read_in_block.get(tx.pk) in tx.hashes:
        return _read_in_block[tx.pk]
    try:
        receipt = receipt_of(chain_client(tx)[1], tx)
    except (Web3RPCError, ValueError, OSError):
        return None
    if receipt is None or receipt["status"] != 1:
        return None
    return hex_of(receipt["transactionHash"])


def rpc_batch(w3: Web3, calls: list[tuple[str, list[Any]]]) -> list[dict[str, Any]]:
    """The node's answers to these JSON-RPC calls, sent as one batch, in the order asked: each a dict with
    `result` or `error`. An answer of the wrong shape raises ValueError."""
    answers = cast(Any, w3.provider).make_batch_request(calls)
    if not isinstance(answers, list) or len(answers) != len(calls):
        raise ValueError(f"JSON-RPC batch: {len(calls)} asked, not one answer each")
    if not all(isinstance(answer, dict) for answer in answers):
        raise ValueError("JSON-RPC batch: an answer is not an object")
    return answers


def receipts_and_head(w3: Web3, txs: list[OutboxTx]) -> tuple[dict[int, Any], int]:
    """The receipts of these transactions (by row id, those on the chain; whichever signed version was
    mined) and the chain's head, in one JSON-RPC batch: a burst's receipts cost one request, not one each.

    A node's error for one item, or an answer of the wrong shape, raises (the caller reads again later)."""
    calls: list[tuple[str, list[Any]]] = [("eth_blockNumber", [])]
    asked: list[tuple[int, str]] = []
    for tx in txs:
        for tx_hash in reversed(tx.hashes):
            calls.append(("eth_getTransactionReceipt", [tx_hash]))
            asked.append((tx.pk, tx_hash))
    results = []
    for (method, _), answer in zip(calls, rpc_batch(w3, calls), strict=True):
        if "error" in answer or "result" not in answer:
            raise ValueError(f"{method}: {str(answer)[:120]}")
        results.append(answer["result"])
    head = int(results[0], 16)
    receipts: dict[int, Any] = {}
    for (pk, _), result in zip(asked, results[1:], strict=True):
        if result is not None and pk not in receipts:
            receipts[pk] = receipt_formatter(result)
    return receipts, head


class SenderCounts:
    """Each sender's confirmed transaction count on each chain, and each chain's head, read at most once per
    poll."""

    def __init__(self) -> None:
        self._counts: dict[tuple[int, str], int] = {}
        self._heads: dict[int, int] = {}

    def head(self, w3: Web3, chain_id: int) -> int:
        if chain_id not in self._heads:
            self._heads[chain_id] = w3.eth.block_number
        return self._heads[chain_id]

    def latest(self, w3: Web3, tx: OutboxTx) -> int:
        key = (tx.chain_id, tx.sender)
        if key not in self._counts:
            self._counts[key] = w3.eth.get_transaction_count(to_checksum_address(tx.sender), "latest")
        return self._counts[key]
