"""The deposit watcher: confirmed transfers to watched addresses, read from a chain once each.

One scan of one chain (a beat task per chain; a lease on the chain's cursor
keeps it to one at a time across processes):

1. the head, and the confirmed end: `head - confirmations`; nothing later is
   read, so a transfer in a block that is reorganised away before it is
   confirmed is never seen;
2. from the block after the cursor, at most WATCHER_MAX_BLOCKS blocks:
   ERC-20 `Transfer` logs to the watched addresses (one `eth_getLogs` per
   WATCHER_ADDRESSES_PER_QUERY addresses), and native-coin transfers to them
   (the range's blocks with their transactions, in one JSON-RPC batch; then
   the receipts of the matching ones, in another);
3. each transfer becomes a `Deposit` once (unique on chain, tx hash, log
   index), with its block number and hash, and is handed to the handler
   named in CHAIN_DEPOSIT_HANDLER, in the transaction that records it; a
   handler that fails leaves the deposit unhandled, with its error, for
   `retry_unhandled_deposits`, and the cursor still moves on;
4. the cursor moves to the end of the range.

Native coin sent by a contract (an internal transfer) is not seen: that would
need tracing, which public RPCs rarely offer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string
from eth_utils import keccak
from web3 import Web3

from chains.client import web3_for
from chains.evm import ZERO_ADDRESS
from chains.models import ChainCursor, Deposit, WatchedAddress
from chains.registry import Chain, chain_get

logger = logging.getLogger(__name__)

TRANSFER_TOPIC = "0x" + keccak(b"Transfer(address,address,uint256)").hex()
LEASE_SECONDS = 120


@dataclass(frozen=True)
class Transfer:
    tx_hash: str
    log_index: int
    block_number: int
    block_hash: str
    from_address: str
    to_address: str
    token: str
    amount: int


@dataclass(frozen=True)
class ScanResult:
    scanned_from: int
    scanned_to: int
    head: int
    deposits: int
    rpc_requests: int


def watch_address(*, chain_id: int, address: str, owner: str, watch_until) -> None:
    """Watch `address` on a chain until `watch_until`; what arrives there is handed over with `owner`."""
    WatchedAddress.objects.update_or_create(
        chain_id=chain_id, address=address, defaults={"owner": owner, "watch_until": watch_until}
    )


def _hex(value) -> str:
    return value.to_0x_hex() if hasattr(value, "to_0x_hex") else str(value)


class _Counter:
    """Counts HTTP requests to the node (a JSON-RPC batch is one)."""

    def __init__(self) -> None:
        self.requests = 0


def _token_transfers(
    w3: Web3, start: int, end: int, addresses: list[str], counter: _Counter
) -> list[Transfer]:
    found = []
    size = settings.WATCHER_ADDRESSES_PER_QUERY
    for offset in range(0, len(addresses), size):
        padded = ["0x" + "00" * 12 + a[2:].lower() for a in addresses[offset : offset + size]]
        counter.requests += 1
        logs = w3.eth.get_logs({"fromBlock": start, "toBlock": end, "topics": [TRANSFER_TOPIC, None, padded]})
        for log in logs:
            if len(log["topics"]) != 3:  # ERC-721 shares the signature, with the token id indexed too
                continue
            found.append(
                Transfer(
                    tx_hash=_hex(log["transactionHash"]),
                    log_index=log["logIndex"],
                    block_number=log["blockNumber"],
                    block_hash=_hex(log["blockHash"]),
                    from_address=Web3.to_checksum_address("0x" + bytes(log["topics"][1])[-20:].hex()),
                    to_address=Web3.to_checksum_address("0x" + bytes(log["topics"][2])[-20:].hex()),
                    token=Web3.to_checksum_address(log["address"]),
                    amount=int.from_bytes(bytes(log["data"]), "big"),
                )
            )
    return found


def _native_transfers(
    w3: Web3, start: int, end: int, addresses: set[str], counter: _Counter
) -> list[Transfer]:
    counter.requests += 1
    with w3.batch_requests() as batch:
        for number in range(start, end + 1):
            batch.add(w3.eth.get_block(number, True))
        blocks: list[Any] = list(batch.execute())
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
        Transfer(
            tx_hash=_hex(tx["hash"]),
            log_index=-1,
            block_number=block["number"],
            block_hash=_hex(block["hash"]),
            from_address=Web3.to_checksum_address(tx["from"]),
            to_address=Web3.to_checksum_address(tx["to"]),
            token=ZERO_ADDRESS,
            amount=tx["value"],
        )
        for (block, tx), receipt in zip(candidates, receipts, strict=True)
        if receipt["status"] == 1
    ]


def _lease(chain_id: int) -> bool:
    ChainCursor.objects.get_or_create(chain_id=chain_id)
    now = timezone.now()
    return (
        ChainCursor.objects.filter(pk=chain_id)
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .update(leased_until=now + timedelta(seconds=LEASE_SECONDS))
        == 1
    )


def scan_chain(chain_id: int) -> ScanResult | None:
    """One scan of a chain; None when it has no RPC URL or another scan of it is running."""
    chain = chain_get(chain_id)
    if chain is None or not chain.rpc_url or not _lease(chain_id):
        return None
    try:
        return _scan(chain)
    except Exception as exc:  # an RPC failure: recorded on the cursor, retried at the next poll
        logger.warning("Scan of %s failed: %s", chain.name, exc.__class__.__name__)
        ChainCursor.objects.filter(pk=chain_id).update(
            last_error=f"{exc.__class__.__name__}: {exc}"[:500], last_scan_at=timezone.now()
        )
        return None
    finally:
        ChainCursor.objects.filter(pk=chain_id).update(leased_until=None)


def _scan(chain: Chain) -> ScanResult:
    w3, counter = web3_for(chain), _Counter()
    counter.requests += 1
    head = w3.eth.block_number
    cursor = ChainCursor.objects.get(pk=chain.chain_id)
    scanned_to = cursor.scanned_to
    if scanned_to > head:
        if not chain.devnet:
            raise RuntimeError(f"the node's head {head} is behind the cursor {scanned_to}")
        scanned_to = -1  # a devnet restarted from block 0: read it again
    if scanned_to < 0 and not chain.devnet:
        scanned_to = max(-1, head - chain.confirmations - settings.WATCHER_FIRST_LOOKBACK_BLOCKS)
    start = scanned_to + 1
    end = min(head - chain.confirmations, start + settings.WATCHER_MAX_BLOCKS - 1)
    transfers: list[Transfer] = []
    if end >= start:
        watched = list(
            WatchedAddress.objects.filter(
                chain_id=chain.chain_id, watch_until__gte=timezone.now()
            ).values_list("address", flat=True)
        )
        if watched:
            transfers = _token_transfers(w3, start, end, watched, counter)
            transfers += _native_transfers(w3, start, end, {a.lower() for a in watched}, counter)
    recorded = _record(chain, transfers)
    ChainCursor.objects.filter(pk=chain.chain_id).update(
        scanned_to=max(end, scanned_to), head=head, last_scan_at=timezone.now(), last_error=""
    )
    return ScanResult(
        scanned_from=start, scanned_to=end, head=head, deposits=recorded, rpc_requests=counter.requests
    )


def _record(chain: Chain, transfers: list[Transfer]) -> int:
    if not transfers:
        return 0
    owners = dict(
        WatchedAddress.objects.filter(
            chain_id=chain.chain_id, address__in={t.to_address for t in transfers}
        ).values_list("address", "owner")
    )
    recorded = 0
    for transfer in sorted(transfers, key=lambda t: (t.block_number, t.log_index)):
        with transaction.atomic():
            deposit, created = Deposit.objects.get_or_create(
                chain_id=chain.chain_id,
                tx_hash=transfer.tx_hash,
                log_index=transfer.log_index,
                defaults={
                    "block_number": transfer.block_number,
                    "block_hash": transfer.block_hash,
                    "from_address": transfer.from_address,
                    "to_address": transfer.to_address,
                    "token": transfer.token,
                    "amount": str(transfer.amount),
                    "owner": owners.get(transfer.to_address, ""),
                },
            )
        if created:
            recorded += 1
            handle_deposit(deposit)
    return recorded


def handle_deposit(deposit: Deposit) -> bool:
    """Hand a deposit to its owner's handler (CHAIN_DEPOSIT_HANDLER), once; True when it was handled."""
    handler = import_string(settings.CHAIN_DEPOSIT_HANDLER)
    try:
        with transaction.atomic():
            locked = Deposit.objects.select_for_update().get(pk=deposit.pk)
            if locked.handled_at is not None:
                return True
            handler(locked)
            Deposit.objects.filter(pk=deposit.pk).update(handled_at=timezone.now(), handler_error="")
        return True
    except Exception as exc:
        logger.exception("Deposit %s could not be handled", deposit.pk)
        Deposit.objects.filter(pk=deposit.pk).update(handler_error=f"{exc.__class__.__name__}: {exc}"[:500])
        return False


def retry_unhandled_deposits(*, limit: int = 100) -> int:
    """Hand over again the deposits whose handler failed; returns how many were handled now."""
    pending = Deposit.objects.filter(handled_at__isnull=True).order_by("created_at")[:limit]
    return sum(handle_deposit(deposit) for deposit in pending)
