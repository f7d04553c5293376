"""The deposit watcher: confirmed transfers to watched addresses, read from a chain once each.

One scan of one chain (a beat task per chain; a lease on the chain's cursor
keeps it to one at a time across processes):

1. the head, and the confirmed end: `head - confirmations`; nothing later is
   read, so a transfer in a block that is reorganised away before it is
   confirmed is never seen;
2. a reorg deeper than that: the cursor keeps the hash of the last block it
   read; when the block there has another hash (or the chain got shorter),
   the deposits of the last REORG_WINDOW_BLOCKS blocks whose block is gone are
   marked `orphaned` and the cursor goes back that far to read them again;
3. from the block after the cursor, at most WATCHER_MAX_BLOCKS blocks:
   ERC-20 `Transfer` logs to the watched addresses (one `eth_getLogs` per
   WATCHER_ADDRESSES_PER_QUERY addresses), and native-coin transfers to them
   (the range's blocks with their transactions, in one JSON-RPC batch; then
   the receipts of the matching ones, in another); every log must come from
   the blocks read, or the scan stops (a reorg while it ran) and is retried;
4. each transfer is one `Deposit`, named by its transaction and its place
   among that transaction's transfers of the same token to the same address,
   so a transaction that a reorg moved to another block is the same deposit
   (its block is updated; an orphaned one is confirmed again). A new deposit
   is handed to its owner's handler (`chains.handlers`) in the transaction
   that records it, unless its token is not in the registry: that one is held
   for staff (an incident), never swept or refunded, so a contract that emits
   fake Transfer events costs the vault nothing. A handler that fails leaves
   the deposit unhandled, with its error, for `retry_unhandled_deposits`;
5. a deposit still orphaned REORG_GRACE_BLOCKS after it was found gone is
   `withdrawn`, and handed to its owner again so that it stops counting it;
6. the cursor moves to the end of the range, with that block's hash.

Zero-amount transfers move nothing and are not recorded.

Native coin sent by a contract (a Safe, an ERC-4337 account: an internal CALL)
is in no transaction's `value` to the address, so it is found by balance
(`_native_internal`): each watched address's balance at the end of the range,
read in JSON-RPC batches, against its balance at the block before (kept on the
row from the last scan), plus what the factory swept out of it meanwhile (its
`Swept` events), less the top-level transfers found. What is left arrived by
internal calls. Where the chain's RPC offers `trace_block` (the chain's
`traces`), the traces name each internal transfer's transaction and sender;
otherwise the remainder is one deposit without a sender, named by the block it
was seen at: counted like any other, and refunded (if it must be) to the
order's `refundAddress` or to an address staff enter. A balance that falls by
more than the sweeps explain is never counted: staff are told.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from eth_utils import keccak
from web3 import Web3

from chains.client import block_hashes, nodes_status, scan_node, web3_node
from chains.evm import ZERO_ADDRESS
from chains.handlers import deposit_changed
from chains.incidents import incident_record
from chains.models import ChainCursor, Deposit, Incident, Token, WatchedAddress
from chains.registry import Chain, chain_get

logger = logging.getLogger(__name__)

TRANSFER_TOPIC = "0x" + keccak(b"Transfer(address,address,uint256)").hex()
LEASE_SECONDS = 120


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


class ReorgDuringScan(RuntimeError):
    """A log came from a block that is not the one read at its height: the chain moved while the scan ran."""


def _numbered(transfers: list[dict[str, Any]]) -> list[Transfer]:
    """Transfers with their `seq`: their order, by log index, among the transaction's transfers of the same
    token to the same address."""
    seen: dict[tuple[str, str, str], int] = {}
    numbered = []
    for fields in sorted(transfers, key=lambda t: (t["block_number"], t["log_index"])):
        key = (fields["tx_hash"], fields["to_address"], fields["token"])
        seen[key] = seen.get(key, -1) + 1
        numbered.append(Transfer(seq=seen[key], **fields))
    return numbered


def _token_transfers(
    w3: Web3, start: int, end: int, addresses: list[str], counter: _Counter
) -> list[dict[str, Any]]:
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
                {
                    "tx_hash": _hex(log["transactionHash"]),
                    "log_index": log["logIndex"],
                    "block_number": log["blockNumber"],
                    "block_hash": _hex(log["blockHash"]),
                    "from_address": Web3.to_checksum_address("0x" + bytes(log["topics"][1])[-20:].hex()),
                    "to_address": Web3.to_checksum_address("0x" + bytes(log["topics"][2])[-20:].hex()),
                    "token": Web3.to_checksum_address(log["address"]),
                    "amount": int.from_bytes(bytes(log["data"]), "big"),
                }
            )
    return found


def _blocks(w3: Web3, start: int, end: int, counter: _Counter, *, full: bool) -> list[Any]:
    counter.requests += 1
    with w3.batch_requests() as batch:
        for number in range(start, end + 1):
            batch.add(w3.eth.get_block(number, full))
        return list(batch.execute())


def _native_transfers(
    blocks: list[Any], w3: Web3, addresses: set[str], counter: _Counter
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
            "tx_hash": _hex(tx["hash"]),
            "log_index": -1,
            "block_number": block["number"],
            "block_hash": _hex(block["hash"]),
            "from_address": Web3.to_checksum_address(tx["from"]),
            "to_address": Web3.to_checksum_address(tx["to"]),
            "token": ZERO_ADDRESS,
            "amount": tx["value"],
        }
        for (block, tx), receipt in zip(candidates, receipts, strict=True)
        if receipt["status"] == 1
    ]


SWEPT_TOPIC = "0x" + keccak(b"Swept(bytes32,address,address,uint256)").hex()
ZERO_TOPIC = "0x" + "00" * 32
BALANCE_SEEN = -1000  # the log index of a native deposit seen by balance, its transaction unknown


def _balances(w3: Web3, addresses: list[str], block: int | str, counter: _Counter) -> dict[str, int]:
    """Native balances at `block` (a number, or a hash: EIP-1898), WATCHER_BALANCES_PER_BATCH per JSON-RPC batch.
    An answer that is not a non-negative integer is refused (never counted as money)."""
    found: dict[str, int] = {}
    size = settings.WATCHER_BALANCES_PER_BATCH
    identifier: Any = {"blockHash": block} if isinstance(block, str) else hex(block)
    for offset in range(0, len(addresses), size):
        chunk = addresses[offset : offset + size]
        counter.requests += 1
        answer = _batch(w3, [("eth_getBalance", [a, identifier]) for a in chunk])
        if not isinstance(answer, list) or len(answer) != len(chunk):
            raise MalformedAnswer("eth_getBalance batch: not one answer per address")
        for address, item in zip(chunk, answer, strict=True):
            result = item.get("result") if isinstance(item, dict) else None
            if not isinstance(result, str) or not result.startswith("0x"):
                raise MalformedAnswer(f"eth_getBalance of {address}: {str(item)[:80]}")
            found[address] = int(result, 16)
    return found


def _batch(w3: Web3, calls: list[tuple[str, list[Any]]]) -> Any:
    """One JSON-RPC batch, answers as the node sent them (checked by the caller)."""
    return cast(Any, w3.provider).make_batch_request(calls)


class MalformedAnswer(ValueError):
    """A node's answer of the wrong shape: the scan stops and nothing of it is counted."""


def _swept_out(chain: Chain, w3: Web3, start: int, end: int, counter: _Counter) -> dict[str, int]:
    """Native coin the factory swept out of each forwarder in the range (its `Swept` events), by address."""
    from chains.artifacts import forwarder_init_code_hash
    from chains.evm import create2_address

    if not chain.factory_address:
        return {}
    counter.requests += 1
    logs = w3.eth.get_logs(
        {
            "fromBlock": start,
            "toBlock": end,
            "address": Web3.to_checksum_address(chain.factory_address),
            "topics": [SWEPT_TOPIC, None, ZERO_TOPIC],
        }
    )
    out: dict[str, int] = {}
    for log in logs:
        salt = bytes(log["topics"][1])
        forwarder = create2_address(
            factory=chain.factory_address, salt=salt, init_code_hash=forwarder_init_code_hash()
        )
        out[forwarder] = out.get(forwarder, 0) + int.from_bytes(bytes(log["data"])[:32], "big")
    return out


def _traced(w3: Web3, start: int, end: int, addresses: set[str], counter: _Counter) -> list[dict[str, Any]]:
    """Internal native transfers to the addresses in the range, from `trace_block` (parity-style traces): calls
    with value below the top level of a transaction that did not fail there."""
    counter.requests += 1
    answer = _batch(w3, [("trace_block", [hex(n)]) for n in range(start, end + 1)])
    if not isinstance(answer, list) or any(not isinstance(a, dict) or "result" not in a for a in answer):
        raise MalformedAnswer("trace_block: no traces")
    found = []
    for item in answer:
        for trace in item["result"] or []:
            action = trace.get("action") or {}
            if (
                trace.get("type") != "call"
                or not trace.get("traceAddress")
                or trace.get("error")
                or str(action.get("callType", "call")) not in ("call",)
            ):
                continue
            to, value = str(action.get("to", "")), int(str(action.get("value", "0x0")), 16)
            if value <= 0 or to.lower() not in addresses:
                continue
            found.append(
                {
                    "tx_hash": trace["transactionHash"],
                    "block_number": trace["blockNumber"],
                    "block_hash": trace["blockHash"],
                    "from_address": Web3.to_checksum_address(action["from"]),
                    "to_address": Web3.to_checksum_address(to),
                    "token": ZERO_ADDRESS,
                    "amount": value,
                }
            )
    # A transaction that reverted at its top level undoes its internal transfers: traces of such transactions
    # carry the error on the top-level trace only, so keep only those whose receipt succeeded.
    if found:
        counter.requests += 1
        hashes = sorted({t["tx_hash"] for t in found})
        receipts = _batch(w3, [("eth_getTransactionReceipt", [h]) for h in hashes])
        ok = {
            h
            for h, r in zip(hashes, receipts if isinstance(receipts, list) else [], strict=False)
            if isinstance(r, dict)
            and isinstance(r.get("result"), dict)
            and r["result"].get("status") == "0x1"
        }
        found = [t for t in found if t["tx_hash"] in ok]
    for index, transfer in enumerate(found):
        transfer["log_index"] = -2 - index  # below the top level: no log, and not the top-level transfer (-1)
    return found


def _native_internal(
    chain: Chain,
    w3: Web3,
    start: int,
    end: int,
    watched: list[str],
    top_level: list[dict[str, Any]],
    hashes: dict[int, str],
    before_hash: str,
    counter: _Counter,
    signers: dict[str, str],
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Native coin that reached watched addresses in blocks start..end by internal calls; and the watched
    addresses' balances at `end` that changed or were not known (kept on their rows when the scan commits).

    One batch of `eth_getBalance` per WATCHER_BALANCES_PER_BATCH addresses at `end`; the balance at the block
    before is the row's, or (a new address, or after a reorg) read too; the factory's sweeps and the traces
    are read only when a balance moved by more than the top-level transfers explain."""
    known = dict(
        WatchedAddress.objects.filter(
            chain_id=chain.chain_id, address__in=watched, native_balance__isnull=False
        ).values_list("address", "native_balance")
    )
    read = _balances(w3, list(dict.fromkeys([*watched, *signers.values()])), hashes[end], counter)
    _gas_seen(chain, {role: read[address] for role, address in signers.items()})
    after = {address: read[address] for address in watched}
    before = {address: int(balance or 0) for address, balance in known.items()}
    missing = [address for address in watched if address not in before]
    if missing:
        before |= (
            _balances(w3, missing, before_hash or start - 1, counter)
            if start > 0
            else dict.fromkeys(missing, 0)
        )
    arrived = {address: 0 for address in watched}
    for transfer in top_level:
        arrived[transfer["to_address"]] = arrived.get(transfer["to_address"], 0) + transfer["amount"]
    moved = [a for a in watched if after[a] - before[a] != arrived[a]]
    if not moved:
        return [], _changed(known, after)
    swept = _swept_out(chain, w3, start, end, counter)
    unexplained: dict[str, int] = {}
    for address in moved:
        extra = after[address] - before[address] + swept.get(address, 0) - arrived[address]
        if extra < 0:
            _balance_fell(chain, address, end, before[address], after[address], swept.get(address, 0))
        elif extra > 0:
            unexplained[address] = extra
    if not unexplained:
        return [], _changed(known, after)
    internal: list[dict[str, Any]] = []
    if chain.traces:  # each internal transfer with its transaction and sender (seen again: the same deposit)
        internal = [
            t
            for t in _traced(w3, start, end, {a.lower() for a in unexplained}, counter)
            if t["to_address"] in unexplained
        ]
        for transfer in internal:
            unexplained[transfer["to_address"]] -= transfer["amount"]
    seen = _seen_by_balance(chain, start, end, list(unexplained))
    for address, amount in unexplained.items():
        amount -= seen.get(
            address, 0
        )  # a range read again after a reorg: what is still counted stays counted
        if amount > 0:  # seen by balance only: no transaction, no sender
            internal.append(
                {
                    "tx_hash": hashes[end],
                    "log_index": BALANCE_SEEN,
                    "block_number": end,
                    "block_hash": hashes[end],
                    "from_address": "",
                    "to_address": address,
                    "token": ZERO_ADDRESS,
                    "amount": amount,
                }
            )
            logger.warning(
                "%s: %s wei reached %s by an internal call in blocks %s-%s; its sender is unknown",
                chain.name,
                amount,
                address,
                start,
                end,
            )
    return internal, _changed(known, after)


def _changed(known: dict[str, Any], after: dict[str, int]) -> dict[str, int]:
    """The balances to write back: those that moved or were not known (a scan writes only what changed)."""
    return {
        address: balance
        for address, balance in after.items()
        if known.get(address) is None or int(known[address]) != balance
    }


def _seen_by_balance(chain: Chain, start: int, end: int, addresses: list[str]) -> dict[str, int]:
    """Native coin recorded as seen by balance at these addresses in these blocks, still counted."""
    rows = Deposit.objects.filter(
        chain_id=chain.chain_id,
        to_address__in=addresses,
        token=ZERO_ADDRESS,
        log_index=BALANCE_SEEN,
        block_number__gte=start,
        block_number__lte=end,
        status=Deposit.Status.CONFIRMED,
    ).values_list("to_address", "amount")
    total: dict[str, int] = {}
    for address, amount in rows:
        total[address] = total.get(address, 0) + int(amount)
    return total


def _signers() -> dict[str, str]:
    """The service's signing addresses (role: address) whose gas the scans read."""
    from chains.signers import signer_address

    return {
        role: Web3.to_checksum_address(signer_address(role))
        for role in ("vault", "solver")
        if signer_address(role)
    }


def _gas_seen(chain: Chain, balances: dict[str, int]) -> None:
    """Record the signers' native balances on the cursor; below the chain's threshold, warn (once per fall)."""
    thresholds = {"vault": chain.vault_gas_threshold, "solver": chain.solver_gas_threshold}
    cursor = ChainCursor.objects.filter(pk=chain.chain_id).values_list("gas", flat=True).first() or {}
    for role, balance in balances.items():
        previous = cursor.get(role)
        low, was_low = balance < thresholds[role], previous is not None and int(previous) < thresholds[role]
        if low and not was_low:
            logger.warning(
                "%s: the %s's gas is low: %s wei, below its threshold %s; its transactions wait for more",
                chain.name,
                role,
                balance,
                thresholds[role],
            )
        elif was_low and not low:
            logger.warning(
                "%s: the %s's gas is above its threshold again (%s wei)", chain.name, role, balance
            )
    ChainCursor.objects.filter(pk=chain.chain_id).update(gas={role: str(b) for role, b in balances.items()})


def _balance_fell(chain: Chain, address: str, end: int, before: int, after: int, swept: int) -> None:
    """A watched balance that fell by more than the factory swept: never counted as money; staff are told."""
    incident_record(
        kind=Incident.Kind.BALANCE_ANOMALY,
        subject=f"balance:{chain.chain_id}:{address}:{end}",
        chain_id=chain.chain_id,
        summary=f"the native balance of {address} went from {before} to {after} by block {end}, {swept} swept: "
        "more left than the service moved; nothing of it is counted",
        details={"before": str(before), "after": str(after), "swept": str(swept), "block": end},
    )


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
    if chain is None or not chain.rpc_urls or not _lease(chain_id):
        return None
    try:
        return _scan(chain)
    except Exception as exc:  # an RPC failure: recorded on the cursor, retried at the next poll
        logger.warning("Scan of %s failed: %s: %s", chain.name, exc.__class__.__name__, str(exc)[:200])
        ChainCursor.objects.filter(pk=chain_id).update(
            last_error=f"{exc.__class__.__name__}: {exc}"[:500],
            last_scan_at=timezone.now(),
            nodes=nodes_status(chain),
        )
        return None
    finally:
        ChainCursor.objects.filter(pk=chain_id).update(leased_until=None)


def _reorganised(w3: Web3, cursor: ChainCursor, head: int, counter: _Counter) -> bool:
    """Whether the block the cursor last read is no longer on the chain (or the chain is now shorter)."""
    if cursor.scanned_to < 0:
        return False
    if cursor.scanned_to > head:
        return True
    if not cursor.scanned_hash:
        return False  # read before hashes were kept: nothing to compare with
    counter.requests += 1
    return _hex(w3.eth.get_block(cursor.scanned_to)["hash"]) != cursor.scanned_hash


def _rewind(chain: Chain, w3: Web3, cursor: ChainCursor, head: int, counter: _Counter) -> int:
    """Mark orphaned the deposits whose block a reorg took away; the block to read again after."""
    if chain.devnet and cursor.scanned_to > head:
        back_to = -1  # a devnet restarted from block 0: read it all again
    else:
        back_to = max(-1, min(cursor.scanned_to, head) - settings.REORG_WINDOW_BLOCKS)
    recent = list(
        Deposit.objects.filter(chain_id=chain.chain_id, block_number__gt=back_to)
        .exclude(status__in=(Deposit.Status.ORPHANED, Deposit.Status.WITHDRAWN))
        .values_list("pk", "block_number", "block_hash")
    )
    numbers = sorted({number for _, number, _ in recent if number <= head})
    counter.requests += bool(numbers)
    canonical = block_hashes(w3, numbers)
    gone = [pk for pk, number, block_hash in recent if canonical.get(number) != block_hash]
    Deposit.objects.filter(pk__in=gone).update(status=Deposit.Status.ORPHANED, orphaned_at_block=head)
    ChainCursor.objects.filter(pk=chain.chain_id).update(scanned_to=back_to, scanned_hash="")
    WatchedAddress.objects.filter(chain_id=chain.chain_id).update(
        native_balance=None
    )  # read again at back_to
    logger.warning(
        "Reorg on %s: block %s is no longer the one read; reading again from block %s, %s deposit(s) orphaned",
        chain.name,
        cursor.scanned_to,
        back_to + 1,
        len(gone),
    )
    return back_to


def _scan(chain: Chain) -> ScanResult:
    counter = _Counter()
    url, head, asked = scan_node(chain)
    counter.requests += len(asked)
    w3 = web3_node(chain, url)  # the whole scan reads one node, which has every block up to `head`
    cursor = ChainCursor.objects.get(pk=chain.chain_id)
    scanned_to, scanned_hash = cursor.scanned_to, cursor.scanned_hash
    if _reorganised(w3, cursor, head, counter):
        scanned_to, scanned_hash = _rewind(chain, w3, cursor, head, counter), ""
    if scanned_to < 0 and not chain.devnet:
        scanned_to = max(-1, head - chain.confirmations - settings.WATCHER_FIRST_LOOKBACK_BLOCKS)
    start = scanned_to + 1
    end = min(head - chain.confirmations, start + settings.WATCHER_MAX_BLOCKS - 1)
    transfers: list[Transfer] = []
    balances: dict[str, int] = {}
    if end >= start:
        watched = list(
            WatchedAddress.objects.filter(
                chain_id=chain.chain_id, watch_until__gte=timezone.now()
            ).values_list("address", flat=True)
        )
        if watched:
            found = _token_transfers(w3, start, end, watched, counter)
            blocks = _blocks(w3, start, end, counter, full=True)
            hashes = {block["number"]: _hex(block["hash"]) for block in blocks}
            if any(hashes.get(t["block_number"]) != t["block_hash"] for t in found):
                raise ReorgDuringScan(f"the chain moved while blocks {start}-{end} were read")
            found += _native_transfers(blocks, w3, {a.lower() for a in watched}, counter)
            before_hash = scanned_hash if scanned_to == start - 1 else ""
            internal, balances = _native_internal(
                chain,
                w3,
                start,
                end,
                watched,
                [t for t in found if t["token"] == ZERO_ADDRESS],
                hashes,
                before_hash,
                counter,
                _signers(),
            )
            found += internal
            transfers = _numbered([t for t in found if t["amount"] > 0])
            scanned_hash = hashes[end]
        else:
            counter.requests += 1
            scanned_hash = _hex(w3.eth.get_block(end)["hash"])
            signers = _signers()
            if signers:  # the gas of the service's signers, read with every scan
                read = _balances(w3, list(dict.fromkeys(signers.values())), scanned_hash, counter)
                _gas_seen(chain, {role: read[address] for role, address in signers.items()})
    with transaction.atomic():  # what the scan found, the balances it read and the cursor: all or nothing
        recorded = _record(chain, transfers)
        if end >= start:
            _withdraw_orphans(chain, end)
        for address, balance in balances.items():
            WatchedAddress.objects.filter(chain_id=chain.chain_id, address=address).update(
                native_balance=balance
            )
        ChainCursor.objects.filter(pk=chain.chain_id).update(
            scanned_to=max(end, scanned_to),
            scanned_hash=scanned_hash,
            head=head,
            last_scan_at=timezone.now(),
            last_error="",
            nodes=nodes_status(chain),
        )
    return ScanResult(
        scanned_from=start, scanned_to=end, head=head, deposits=recorded, rpc_requests=counter.requests
    )


def _listed(chain: Chain, transfers: list[Transfer]) -> set[str]:
    """The tokens among the transfers that the registry lists on the chain (native coin always is)."""
    tokens = {t.token for t in transfers} - {ZERO_ADDRESS}
    listed = set(
        Token.objects.filter(chain_id=chain.chain_id, address__in=tokens).values_list("address", flat=True)
    )
    return listed | {ZERO_ADDRESS}


def _record(chain: Chain, transfers: list[Transfer]) -> int:
    """Record each transfer once; a transfer seen again in another block moves its deposit there."""
    if not transfers:
        return 0
    owners = dict(
        WatchedAddress.objects.filter(
            chain_id=chain.chain_id, address__in={t.to_address for t in transfers}
        ).values_list("address", "owner")
    )
    listed = _listed(chain, transfers)
    recorded = 0
    for transfer in transfers:
        status = Deposit.Status.CONFIRMED if transfer.token in listed else Deposit.Status.UNLISTED
        with transaction.atomic():
            deposit, created = Deposit.objects.get_or_create(
                chain_id=chain.chain_id,
                tx_hash=transfer.tx_hash,
                to_address=transfer.to_address,
                token=transfer.token,
                seq=transfer.seq,
                defaults={
                    "log_index": transfer.log_index,
                    "block_number": transfer.block_number,
                    "block_hash": transfer.block_hash,
                    "from_address": transfer.from_address,
                    "amount": str(transfer.amount),
                    "owner": owners.get(transfer.to_address, ""),
                    "status": status,
                    "handled_at": timezone.now() if status == Deposit.Status.UNLISTED else None,
                },
            )
            if not created and deposit.block_hash != transfer.block_hash:
                deposit = _moved(chain, deposit, transfer, status)
        if created:
            recorded += 1
            if status == Deposit.Status.UNLISTED:
                _hold_unlisted(chain, deposit)
                continue
        if deposit.handled_at is None:
            handle_deposit(deposit)
    return recorded


def _moved(chain: Chain, deposit: Deposit, transfer: Transfer, status: str) -> Deposit:
    """The deposit's transaction is in another block now (a reorg): the same deposit, never a second one.

    An orphaned deposit is confirmed again; a withdrawn one (seen again after
    the grace) is handed to its owner again, and staff are told.
    """
    returned = deposit.status == Deposit.Status.WITHDRAWN
    fields: dict[str, Any] = {
        "block_number": transfer.block_number,
        "block_hash": transfer.block_hash,
        "log_index": transfer.log_index,
        "status": status,
        "orphaned_at_block": None,
    }
    if returned:
        fields["handled_at"] = None
    Deposit.objects.filter(pk=deposit.pk).update(**fields)
    logger.warning(
        "Deposit %s (%s) is in block %s now (was %s)",
        deposit.pk,
        deposit.tx_hash,
        transfer.block_number,
        deposit.block_number,
    )
    if returned and deposit.owner:
        incident_record(
            kind=Incident.Kind.DEPOSIT_RETURNED,
            subject=f"deposit:{deposit.pk}",
            chain_id=chain.chain_id,
            summary=f"{deposit.amount} of {deposit.token} to {deposit.to_address} ({deposit.owner}) came back in "
            f"block {transfer.block_number} after it was withdrawn; its owner is told again",
            details={"tx_hash": deposit.tx_hash, "owner": deposit.owner},
        )
    deposit.refresh_from_db()
    return deposit


def _hold_unlisted(chain: Chain, deposit: Deposit) -> None:
    """A token the registry does not list: recorded for staff, never handed over (no sweep, no refund)."""
    incident_record(
        kind=Incident.Kind.UNLISTED_TOKEN,
        subject=f"unlisted:{chain.chain_id}:{deposit.token}:{deposit.to_address}",
        chain_id=chain.chain_id,
        summary=f"transfers of {deposit.token}, a token not in the registry, to {deposit.to_address} "
        f"({deposit.owner or 'no owner'}): held, never swept or refunded",
        details={"first_deposit": deposit.pk, "tx_hash": deposit.tx_hash, "amount": deposit.amount},
    )


def _withdraw_orphans(chain: Chain, scanned_to: int) -> None:
    """Deposits not seen again REORG_GRACE_BLOCKS after their block was found gone are withdrawn: their
    owner is told again (handed over), so that what it counted stops counting."""
    due = Deposit.objects.filter(
        chain_id=chain.chain_id,
        status=Deposit.Status.ORPHANED,
        orphaned_at_block__lte=scanned_to - settings.REORG_GRACE_BLOCKS,
    )
    for deposit in list(due):
        if not Deposit.objects.filter(pk=deposit.pk, status=Deposit.Status.ORPHANED).update(
            status=Deposit.Status.WITHDRAWN, handled_at=None
        ):
            continue
        logger.error(
            "Deposit %s (%s, %s of %s to %s) was not seen again after a reorg: withdrawn",
            deposit.pk,
            deposit.tx_hash,
            deposit.amount,
            deposit.token,
            deposit.to_address,
        )
        deposit.refresh_from_db()
        handle_deposit(deposit)


def handle_deposit(deposit: Deposit) -> bool:
    """Hand a deposit (confirmed, or withdrawn) to its owner's handler (`chains.handlers`), once per change
    of its state; True when it was handled. An orphaned or unlisted deposit waits."""
    try:
        with transaction.atomic():
            locked = Deposit.objects.select_for_update().get(pk=deposit.pk)
            if locked.handled_at is not None:
                return True
            if locked.status not in (Deposit.Status.CONFIRMED, Deposit.Status.WITHDRAWN):
                return False
            deposit_changed(locked)
            Deposit.objects.filter(pk=deposit.pk).update(handled_at=timezone.now(), handler_error="")
        return True
    except Exception as exc:
        logger.exception("Deposit %s could not be handled", deposit.pk)
        Deposit.objects.filter(pk=deposit.pk).update(handler_error=f"{exc.__class__.__name__}: {exc}"[:500])
        return False


def retry_unhandled_deposits(*, limit: int = 100) -> int:
    """Hand over again the deposits whose handler failed; returns how many were handled now."""
    pending = Deposit.objects.filter(
        handled_at__isnull=True, status__in=(Deposit.Status.CONFIRMED, Deposit.Status.WITHDRAWN)
    ).order_by("created_at")[:limit]
    return sum(handle_deposit(deposit) for deposit in pending)
