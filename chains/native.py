"""Native coin found by balance: what a contract wallet sends by an internal call is in no transaction's
`value`, so each watched address's balance at the end of a scan's range is compared with the one kept on
its row, plus what the factory swept out meanwhile, less the top-level transfers found (chains.watcher's
docstring tells the whole rule). Also the signers' gas, read in the same batches."""

from __future__ import annotations

import logging
from typing import Any, cast

from django.conf import settings
from eth_utils import keccak
from web3 import Web3

from chains.evm import ZERO_ADDRESS
from chains.incidents import incident_record
from chains.models import ChainCursor, Deposit, Incident, WatchedAddress
from chains.registry import Chain
from chains.transfers import ReorgDuringScan, RequestCounter

logger = logging.getLogger("chains.watcher")  # what it finds is the watcher's news

SWEPT_TOPIC = "0x" + keccak(b"Swept(bytes32,address,address,uint256)").hex()
ZERO_TOPIC = "0x" + "00" * 32
BALANCE_SEEN = -1000  # the log index of a native deposit seen by balance, its transaction unknown


def read_balances(
    w3: Web3, addresses: list[str], block: int | str, counter: RequestCounter
) -> dict[str, int]:
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


def _swept_out(chain: Chain, w3: Web3, start: int, end: int, counter: RequestCounter) -> dict[str, int]:
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


def _traced(
    w3: Web3, start: int, end: int, addresses: set[str], counter: RequestCounter
) -> list[dict[str, Any]]:
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


def native_internal(
    chain: Chain,
    w3: Web3,
    start: int,
    end: int,
    watched: list[str],
    top_level: list[dict[str, Any]],
    hashes: dict[int, str],
    before_hash: str,
    counter: RequestCounter,
    signers: dict[str, str],
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Native coin that reached watched addresses in blocks start..end by internal calls; and the watched
    addresses' balances at `end` that changed or were not known (kept on their rows when the scan commits).

    Where the chain has traces, from them alone (`_internal_by_traces`: one batch, whatever the number of
    addresses). Otherwise one batch of `eth_getBalance` per WATCHER_BALANCES_PER_BATCH addresses at `end`; the
    balance at the block before is the row's, or (a new address, or after a reorg) read too; the factory's
    sweeps are read only when a balance moved by more than the top-level transfers explain."""
    if chain.traces:
        return _internal_by_traces(chain, w3, end, watched, hashes, counter, signers, start), {}
    known = dict(
        WatchedAddress.objects.filter(
            chain_id=chain.chain_id, address__in=watched, native_balance__isnull=False
        ).values_list("address", "native_balance")
    )
    read = read_balances(w3, list(dict.fromkeys([*watched, *signers.values()])), hashes[end], counter)
    gas_seen(chain, {role: read[address] for role, address in signers.items()})
    after = {address: read[address] for address in watched}
    before = {address: int(balance or 0) for address, balance in known.items()}
    missing = [address for address in watched if address not in before]
    if missing:
        before |= (
            read_balances(w3, missing, before_hash or start - 1, counter)
            if start > 0
            else dict.fromkeys(missing, 0)
        )
    arrived = {address: 0 for address in watched}
    for transfer in top_level:
        arrived[transfer["to_address"]] = arrived.get(transfer["to_address"], 0) + transfer["amount"]
    moved = [a for a in watched if after[a] - before[a] != arrived[a]]
    if not moved:
        return [], balances_changed(known, after)
    swept = _swept_out(chain, w3, start, end, counter)
    unexplained: dict[str, int] = {}
    for address in moved:
        extra = after[address] - before[address] + swept.get(address, 0) - arrived[address]
        if extra < 0:
            balance_fell(chain, address, end, before[address], after[address], swept.get(address, 0))
        elif extra > 0:
            unexplained[address] = extra
    if not unexplained:
        return [], balances_changed(known, after)
    internal: list[dict[str, Any]] = []
    seen = seen_by_balance(chain, start, end, list(unexplained))
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
    return internal, balances_changed(known, after)


def _internal_by_traces(
    chain: Chain,
    w3: Web3,
    end: int,
    watched: list[str],
    hashes: dict[int, str],
    counter: RequestCounter,
    signers: dict[str, str],
    start: int,
) -> list[dict[str, Any]]:
    """Where the chain's RPC offers traces, every internal transfer of the range is read from them and matched
    against the watched set: one batch however many addresses are watched, each transfer with its transaction
    and sender. No watched balance is read (only the signers' gas), so none is kept: the rows' balances are
    dropped, to be read afresh if the chain's traces are ever turned off."""
    if signers:
        read = read_balances(w3, list(dict.fromkeys(signers.values())), hashes[end], counter)
        gas_seen(chain, {role: read[address] for role, address in signers.items()})
    stale = WatchedAddress.objects.filter(chain_id=chain.chain_id, native_balance__isnull=False)
    if stale.exists():
        stale.update(native_balance=None)
    found = _traced(w3, start, end, {a.lower() for a in watched}, counter)
    if any(hashes.get(t["block_number"]) != t["block_hash"] for t in found):
        raise ReorgDuringScan(f"the chain moved while the traces of blocks {start}-{end} were read")
    return found


def balances_changed(known: dict[str, Any], after: dict[str, int]) -> dict[str, int]:
    """The balances to write back: those that moved or were not known (a scan writes only what changed)."""
    return {
        address: balance
        for address, balance in after.items()
        if known.get(address) is None or int(known[address]) != balance
    }


def seen_by_balance(chain: Chain, start: int, end: int, addresses: list[str]) -> dict[str, int]:
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


def signer_addresses() -> dict[str, str]:
    """The service's signing addresses (role: address) whose gas the scans read."""
    from chains.signers import signer_address

    return {
        role: Web3.to_checksum_address(signer_address(role))
        for role in ("vault", "solver")
        if signer_address(role)
    }


def gas_seen(chain: Chain, balances: dict[str, int]) -> None:
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


def balance_fell(chain: Chain, address: str, end: int, before: int, after: int, swept: int) -> None:
    """A watched balance that fell by more than the factory swept: never counted as money; staff are told."""
    incident_record(
        kind=Incident.Kind.BALANCE_ANOMALY,
        subject=f"balance:{chain.chain_id}:{address}:{end}",
        chain_id=chain.chain_id,
        summary=f"the native balance of {address} went from {before} to {after} by block {end}, {swept} swept: "
        "more left than the service moved; nothing of it is counted",
        details={"before": str(before), "after": str(after), "swept": str(swept), "block": end},
    )
