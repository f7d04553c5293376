"""Asking for a transaction, signing it once, broadcasting it, and recording how it ended.

A caller asks for a transaction with `outbox_submit(key=...)` inside its own
database transaction. The business key (for example `order:<id>:sweep`) is
unique, so asking twice, from a retried task or a second worker, returns the
same row and never sends a second transaction. Then, in a worker
(`outbox_send`):

1. **sign**: estimate the gas (a call that would revert is marked failed and
   never sent); under the row locks of the transaction and of its sender's
   nonce on that chain, take the next nonce, sign with the role's key
   (chains/signers.py) and store the raw transaction and its hash before
   anything is broadcast;
2. **broadcast** the stored bytes; the node answering "already known" or
   "nonce too low" is not an error: the receipt will tell.

The nonce is taken in the same database transaction that stores the signed
bytes, so it is never used by two transactions nor skipped. A burst asks for
dozens of one sender's transactions at once (a block of payments delivered
from the solver's inventory, or swept by the vault): the first to be sent takes
the sender's other queued transactions on that chain with it (`sign_batch`, up
to OUTBOX_SIGN_BATCH): their estimates, the sender's balance and its count in
one JSON-RPC batch, their nonces under one lock, their broadcasts in another
batch, so they make the next block together; the others' tasks find them sent.
The poller
(chains/outbox/poll.py) records receipts through `finish`, which hands the
outcome to the handler of its key's kind (`chains.handlers`) in the same
transaction.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from eth_typing import HexStr
from eth_utils import to_checksum_address
from web3 import Web3
from web3.exceptions import ContractLogicError, Web3RPCError

from chains.artifacts import ERC20, encode_call
from chains.evm import ZERO_ADDRESS
from chains.handlers import outbox_broadcast, outbox_finished
from chains.incidents import incident_record
from chains.models import Incident, OutboxTx, SenderNonce
from chains.outbox import adopt
from chains.outbox.fees import batch_with_fees, fees_for
from chains.outbox.receipts import call_of, chain_client, hex_of, receipt_logs, rpc_batch
from chains.registry import Chain
from chains.reverts import revert_of
from chains.signers import SignerUnavailable, sign_transaction, signer_address
from chains.states import IN_FLIGHT, OUTBOX
from core.tasks import Later
from observability import metrics

OUTBOX_SEND_TASK = Later("chains.tasks.outbox_send_task")

logger = logging.getLogger(__name__)

# What nodes answer when the transaction (or another with its nonce) is already in the pool or mined.
ALREADY_SENT = ("already known", "nonce too low", "known transaction", "already imported")


class OutboxConflict(ValueError):
    """A business key was asked for again with a different transaction: a bug in the caller."""


def outbox_submit(
    *, key: str, chain_id: int, signer: str, to: str, data: str = "0x", value: int = 0
) -> OutboxTx:
    """The transaction for `key`, asked for once: created (and sent after commit) or the existing one."""
    sender = signer_address(signer)
    if not sender:
        raise SignerUnavailable(f"no address is configured for the {signer} signer")
    fields: dict[str, Any] = {
        "chain_id": chain_id,
        "signer": signer,
        "sender": to_checksum_address(sender),
        "to": to_checksum_address(to),
        "data": data or "0x",
        "value": value,
    }
    with transaction.atomic():
        tx = OutboxTx.objects.filter(key=key).first()
        if tx is None:
            # Sent already, before the database was restored from a backup (chains/outbox/adopt.py)?
            claimed = adopt.claim(key, fields)
            if claimed is not None:
                return claimed
            tx, created = OutboxTx.objects.get_or_create(key=key, defaults=fields)
        else:
            created = False
        if not created:
            asked = (tx.chain_id, tx.signer, tx.to.lower(), tx.data.lower(), int(tx.value))
            if asked != (chain_id, signer, fields["to"].lower(), fields["data"].lower(), value):
                raise OutboxConflict(f"{key} was asked for with another transaction")
            return tx
        tx_id = tx.pk
        transaction.on_commit(lambda: _enqueue_send(tx_id))
    return tx


def outbox_transfer(*, key: str, chain_id: int, signer: str, token: str, to: str, amount: int) -> OutboxTx:
    """`amount` of `token` (the zero address: native coin) from the signer to `to`, once per key."""
    to = to_checksum_address(to)
    if token == ZERO_ADDRESS:
        return outbox_submit(key=key, chain_id=chain_id, signer=signer, to=to, value=amount)
    return outbox_submit(
        key=key, chain_id=chain_id, signer=signer, to=token, data=encode_call(ERC20, "transfer", to, amount)
    )


def _enqueue_send(tx_id: int) -> None:
    OUTBOX_SEND_TASK.delay(tx_id)


def _crash_point(name: str) -> None:
    """The suite's kill-the-worker tests end the process here (OUTBOX_CRASH_AT; development only)."""
    if name == settings.OUTBOX_CRASH_AT:
        logger.warning("OUTBOX_CRASH_AT=%s: exiting as a killed worker would", name)
        os._exit(137)


def outbox_wait(tx: OutboxTx, *, timeout: float, every: float = 0.5) -> OutboxTx:
    """`tx` as it stands once finished, or after `timeout` seconds (still in flight): what a command that asked
    the signing worker for a transaction waits on."""
    deadline = time.monotonic() + timeout
    tx.refresh_from_db()
    while tx.in_flight and time.monotonic() < deadline:
        time.sleep(every)
        tx.refresh_from_db()
    return tx


def still_in_flight(tx: OutboxTx, timeout: float) -> str:
    """What a command says when the transaction it waited on is still in flight."""
    return (
        f"the deployment is still {tx.status} after {timeout:g}s: are the workers running? "
        "Run this again later: it sends nothing twice"
    )


def outbox_send(tx_id: int) -> OutboxTx | None:
    """Sign (once) and broadcast one transaction, with its sender's other queued transactions on the chain
    (`sign_batch`); safe to run again at any time. One already broadcast is left to the poller, which
    broadcasts it again after OUTBOX_REBROADCAST_SECONDS: a burst's tasks find their transactions sent by the
    first of them, and ask the node nothing."""
    tx = OutboxTx.objects.filter(pk=tx_id).first()
    if tx is None:
        logger.warning("Outbox transaction %s is gone: nothing to send", tx_id)
        return None
    outbox_send_row(tx)
    return tx


def outbox_send_row(tx: OutboxTx) -> None:
    """`outbox_send` of a row already read (the EVM family's send, chains.families.evm); `tx` is refreshed."""
    if tx.status == OutboxTx.Status.QUEUED:
        broadcast_batch(sign_batch(tx))
        tx.refresh_from_db()
    elif tx.status == OutboxTx.Status.SIGNED:
        broadcast(tx)


def sign_version(tx: OutboxTx, *, nonce: int, gas: int, fees: tuple[int, int]) -> tuple[str, str]:
    """(raw transaction, hash) of `tx` signed at `nonce` with these fees, by its role's signer backend."""
    signed = sign_transaction(
        tx.signer,
        {
            "type": 2,
            "chainId": tx.chain_id,
            "nonce": nonce,
            "to": tx.to,
            "data": tx.data or "0x",
            "value": int(tx.value),
            "gas": gas,
            "maxFeePerGas": fees[0],
            "maxPriorityFeePerGas": fees[1],
        },
    )
    return signed.raw, signed.tx_hash


def finish(
    tx: OutboxTx,
    *,
    status: str,
    error: str = "",
    receipt=None,
    unless_taken: bool = False,
    from_: tuple[str, ...] = IN_FLIGHT,
) -> bool:
    """Record the outcome once and hand it to its key's handler (`chains.handlers`) in the same transaction.
    With `unless_taken`, a transaction another process is finishing is passed by (False), not waited for; with
    `from_`, only a transaction in one of those statuses is finished (False otherwise)."""
    fields: dict[str, Any] = {"error": error[:500], "finished_at": timezone.now()}
    if receipt is not None:
        fields |= {
            "tx_hash": hex_of(receipt["transactionHash"]),
            "block_number": receipt["blockNumber"],
            "block_hash": hex_of(receipt["blockHash"]),
            "gas_used": receipt["gasUsed"],
            "effective_gas_price": receipt.get("effectiveGasPrice"),
            "logs": receipt_logs(receipt),
        }
    with transaction.atomic():
        if unless_taken:
            free = OutboxTx.objects.select_for_update(skip_locked=True).filter(pk=tx.pk, status__in=IN_FLIGHT)
            if free.values_list("pk", flat=True).first() is None:
                return False
        if not OUTBOX.move(OutboxTx.objects.filter(pk=tx.pk), from_=from_, to=status, **fields):
            return False
        tx.refresh_from_db()
        transaction.on_commit(metrics.outbox_finished.labels(str(tx.chain_id), tx.signer, status).inc)
        outbox_finished(tx)
        if (
            status == OutboxTx.Status.FAILED
            and Incident.objects.filter(kind=Incident.Kind.TX_REORGED, subject=f"outbox:{tx.key}").exists()
        ):
            incident_record(
                kind=Incident.Kind.TX_REORGED,
                subject=f"outbox:{tx.key}:reverted",
                chain_id=tx.chain_id,
                summary=f"{tx.key} was mined, left the chain in a reorg, and reverted when it was sent again: "
                "what its owner counted on did not happen",
                details={"tx_hash": tx.tx_hash, "nonce": tx.nonce},
            )
    log = logger.info if status == OutboxTx.Status.MINED else logger.warning
    log("Outbox %s on chain %s: %s %s %s", tx.key, tx.chain_id, status, tx.tx_hash, error)
    return True


def _gas_limit(estimate: int) -> int:
    # Headroom: state may change between the estimate and the block (a storage slot set from zero costs 20,000
    # gas more than one changed), and an unused limit costs nothing.
    return estimate * 12 // 10 + 20_000


def _signed_fields(tx: OutboxTx, *, nonce: int, gas: int, fees: tuple[int, int]) -> dict[str, Any]:
    """What is stored with the signed bytes of `tx` at `nonce` (its first version, or one signed again)."""
    raw, tx_hash = sign_version(tx, nonce=nonce, gas=gas, fees=fees)
    return {
        "nonce": nonce,
        "gas_limit": gas,
        "max_fee_per_gas": fees[0],
        "max_priority_fee_per_gas": fees[1],
        "raw_tx": raw,
        "tx_hash": tx_hash,
        "hashes": [*tx.hashes, tx_hash],
        "signed_at": timezone.now(),
        "error": "",
    }


def _estimate_params(tx: OutboxTx) -> dict[str, str]:
    return {"from": tx.sender, "to": tx.to, "data": tx.data or "0x", "value": hex(int(tx.value))}


def sign_batch(tx: OutboxTx) -> list[OutboxTx]:
    """Sign `tx` together with its sender's other queued transactions on its chain (at most OUTBOX_SIGN_BATCH,
    oldest first), at consecutive nonces; the transactions signed here, by nonce.

    Their estimates, the sender's balance and its pending count are one JSON-RPC batch; the nonces are taken
    under one lock of the sender's counter, in the database transaction that stores every signed version. A
    transaction whose estimate fails (it would revert, or the sender cannot pay for it), a batch the sender
    cannot pay for whole, a node that does not answer the batch, and a nonce filler (made for one nonce) take
    `sign`, one at a time, exactly as before; a transaction another worker is signing is left to it."""
    if tx.nonce is not None:
        return [sign(tx)]
    others = (
        OutboxTx.objects.filter(
            chain_id=tx.chain_id, sender=tx.sender, status=OutboxTx.Status.QUEUED, nonce__isnull=True
        )
        .exclude(pk=tx.pk)
        .order_by("pk")[: max(settings.OUTBOX_SIGN_BATCH - 1, 0)]
    )
    batch = sorted([tx, *others], key=lambda each: each.pk)
    if len(batch) == 1:
        return [sign(tx)]
    chain, w3 = chain_client(tx)
    sender = to_checksum_address(tx.sender)
    calls: list[tuple[str, list[Any]]] = [
        ("eth_getBalance", [sender, "latest"]),
        ("eth_getTransactionCount", [sender, "pending"]),
        *(("eth_estimateGas", [_estimate_params(each)]) for each in batch),
    ]
    try:
        answers, fees = batch_with_fees(chain, w3, calls)
        balance, pending = int(answers[0]["result"], 16), int(answers[1]["result"], 16)
    except (Web3RPCError, ValueError, KeyError, TypeError, OSError) as exc:
        logger.info("Outbox %s: the batch of %s was not read (%s); signed alone", tx.key, len(batch), exc)
        return [sign(tx)]
    gas: dict[int, int] = {}
    alone: list[OutboxTx] = []  # its estimate failed
    for each, answer in zip(batch, answers[2:], strict=True):
        if "result" in answer and isinstance(answer["result"], str):
            gas[each.pk] = _gas_limit(int(answer["result"], 16))
        else:
            alone.append(each)
    if adopt.chain_ahead(tx.chain_id, sender, pending):
        tx, ready = _adopt_first(tx, chain, w3)
        return [sign(tx)] if ready else [tx]
    cost = sum(gas[each.pk] * fees[0] + int(each.value) for each in batch if each.pk in gas)
    if cost > balance:
        # The sender cannot pay for them all: one at a time, each waiting for gas as it must.
        return [sign(tx)]
    _crash_point("before_sign")
    refused: dict[int, SignerUnavailable] = {}
    with transaction.atomic():
        locked = list(
            OutboxTx.objects.select_for_update(skip_locked=True)
            .filter(pk__in=list(gas), status=OutboxTx.Status.QUEUED, nonce__isnull=True)
            .order_by("pk")
        )
        if locked:
            SenderNonce.objects.get_or_create(
                chain_id=tx.chain_id, address=tx.sender, defaults={"next_nonce": pending}
            )
            nonce_row = SenderNonce.objects.select_for_update().get(chain_id=tx.chain_id, address=tx.sender)
            first = nonce = max(nonce_row.next_nonce, pending)  # never below what the chain has seen
            for each in locked:
                try:
                    fields = _signed_fields(each, nonce=nonce, gas=gas[each.pk], fees=fees)
                except SignerUnavailable as exc:  # a signer that refuses one stops only that one
                    refused[each.pk] = exc
                    continue
                OUTBOX.move(
                    OutboxTx.objects.filter(pk=each.pk),
                    from_=(each.status,),
                    to=OutboxTx.Status.SIGNED,
                    **fields,
                )
                nonce += 1
            SenderNonce.objects.filter(pk=nonce_row.pk).update(next_nonce=nonce)
    locked = [each for each in locked if each.pk not in refused]
    if locked:
        logger.info(
            "Outbox: %s transaction(s) of the %s on %s signed together, nonces %s-%s",
            len(locked),
            tx.signer,
            chain.name,
            first,
            nonce - 1,
        )
        _crash_point("after_sign")
    signed = list(OutboxTx.objects.filter(pk__in=[each.pk for each in locked]).order_by("nonce"))
    if tx.pk in refused:
        broadcast_batch(signed)  # the others are signed: they go out before this one's task fails
        raise refused[tx.pk]
    if any(each.pk == tx.pk for each in alone):
        # Its estimate failed: `sign` says why (it would revert: failed, no nonce; the sender is short of gas:
        # it waits, queued), after the others are out. The others whose estimate failed are left to their own
        # tasks, which every transaction has.
        broadcast_batch(signed)
        return [sign(tx)]
    return signed


def broadcast_batch(txs: list[OutboxTx]) -> None:
    """Broadcast signed transactions of one chain, by nonce, in one JSON-RPC batch; each answer is read as
    `broadcast` reads its own (a node that knows the transaction already is no error). A batch the node does
    not answer is broadcast one by one."""
    txs = [tx for tx in txs if tx.status == OutboxTx.Status.SIGNED]
    if len(txs) <= 1:
        for tx in txs:
            broadcast(tx)
        return
    _, w3 = chain_client(txs[0])
    try:
        answers = rpc_batch(w3, [("eth_sendRawTransaction", [tx.raw_tx]) for tx in txs])
    except (Web3RPCError, ValueError, OSError) as exc:
        logger.info("Outbox: a batch of %s broadcasts was not answered (%s); one by one", len(txs), exc)
        for tx in txs:
            broadcast(tx)
        return
    sent = []
    for tx, answer in zip(txs, answers, strict=True):
        error = answer.get("error")
        message = str(error.get("message") if isinstance(error, dict) else error or "")
        if error is not None and not any(reason in message.lower() for reason in ALREADY_SENT):
            OutboxTx.objects.filter(pk=tx.pk).update(error=f"broadcast refused: {message}"[:500])
            logger.warning("Outbox %s: the node refused the broadcast: %s", tx.key, message)
            continue
        sent.append(tx.pk)
    _crash_point("after_broadcast")
    OUTBOX.move(
        OutboxTx.objects.filter(pk__in=sent),
        from_=IN_FLIGHT[1:],
        to=OutboxTx.Status.BROADCAST,
        broadcast_at=timezone.now(),
        broadcasts=F("broadcasts") + 1,
    )
    outbox_broadcast([tx for tx in txs if tx.pk in sent])


def sign(tx: OutboxTx) -> OutboxTx:
    """Estimate, take the next nonce (or the one a nonce filler was made for) and store the signed bytes."""
    chain, w3 = chain_client(tx)
    read = _read_together(chain, w3, tx)
    if read is not None:
        gas, fees, balance, pending = read
    else:  # one request at a time: a failed estimate says why here (it would revert, or the sender is short)
        try:
            gas = _gas_limit(w3.eth.estimate_gas(call_of(tx)))  # type: ignore[arg-type]
        except ContractLogicError as exc:
            # Only a transaction nobody signed fails by its estimate. Another worker may have signed this one
            # since it was read, and it may be mined already: a CREATE2 deployment, an authorization used once,
            # estimated again after their own block, revert. The outcome of a signed one is its receipt.
            finish(
                tx,
                status=OutboxTx.Status.FAILED,
                error=f"would revert: {revert_of(exc)}",
                from_=(OutboxTx.Status.QUEUED,),
            )
            tx.refresh_from_db()
            return tx
        except Web3RPCError as exc:
            if "insufficient funds" not in str(exc).lower():
                raise
            return _wait_for_gas(tx, chain, w3, need=None)
        fees_read = fees_for(chain, w3)
        assert fees_read is not None  # no bump asked for
        fees = fees_read
        balance = int(w3.eth.get_balance(to_checksum_address(tx.sender)))
        pending = w3.eth.get_transaction_count(to_checksum_address(tx.sender), "pending")
    if adopt.chain_ahead(tx.chain_id, tx.sender, pending):
        tx, ready = _adopt_first(tx, chain, w3)
        if not ready:
            return tx
    if balance < gas * fees[0] + int(tx.value):
        return _wait_for_gas(tx, chain, w3, need=gas * fees[0] + int(tx.value))
    _crash_point("before_sign")
    with transaction.atomic():
        tx = OutboxTx.objects.select_for_update().get(pk=tx.pk)
        if tx.status != OutboxTx.Status.QUEUED:
            return tx  # another worker signed it meanwhile
        SenderNonce.objects.get_or_create(
            chain_id=tx.chain_id, address=tx.sender, defaults={"next_nonce": pending}
        )
        nonce_row = SenderNonce.objects.select_for_update().get(chain_id=tx.chain_id, address=tx.sender)
        if tx.nonce is not None:
            nonce = tx.nonce  # a nonce filler: made for one free nonce below the counter
        else:
            # Never below what the chain has seen from this key (a key used elsewhere too).
            nonce = max(nonce_row.next_nonce, pending)
            SenderNonce.objects.filter(pk=nonce_row.pk).update(next_nonce=nonce + 1)
        fields = _signed_fields(tx, nonce=nonce, gas=gas, fees=fees)
        OUTBOX.move(
            OutboxTx.objects.filter(pk=tx.pk),
            from_=(OutboxTx.Status.QUEUED,),
            to=OutboxTx.Status.SIGNED,
            **fields,
        )
    logger.info("Outbox %s on %s: signed nonce %s as %s", tx.key, chain.name, nonce, fields["tx_hash"])
    _crash_point("after_sign")
    tx.refresh_from_db()
    return tx


WAITING_FOR_POOL = "waiting: the sender's count on the chain is ahead of the database's"


def _adopt_first(tx: OutboxTx, chain: Chain, w3: Web3) -> tuple[OutboxTx, bool]:
    """The chain has seen more of the sender's transactions than the database gave nonces to (restored from a
    backup?): they are found and adopted first (chains/outbox/adopt.py). `tx` as it stands then, and whether
    the caller signs it now (False: one of them was it, or the nodes' pools hold some not mined yet)."""
    if not adopt.adopt_sent(chain, w3, sender=tx.sender, signer=tx.signer):
        error = f"{WAITING_FOR_POOL}, and some of them are not mined yet; signed once they are"
        OutboxTx.objects.filter(pk=tx.pk, status=OutboxTx.Status.QUEUED).update(error=error)
        logger.warning("Outbox %s: %s", tx.key, error)
        tx.refresh_from_db()
        return tx, False
    tx.refresh_from_db()
    return tx, tx.status == OutboxTx.Status.QUEUED


def _read_together(chain: Chain, w3: Web3, tx: OutboxTx) -> tuple[int, tuple[int, int], int, int] | None:
    """(gas limit, fees, the sender's balance, its pending count) for signing `tx` alone, its estimate and the
    sender's two reads in one JSON-RPC batch, with the fee market when it is due (a lone transaction went out
    after five to seven requests, now two); None when the estimate failed or the node did not answer the
    batch, for `sign` to ask one at a time."""
    sender = to_checksum_address(tx.sender)
    calls: list[tuple[str, list[Any]]] = [
        ("eth_getBalance", [sender, "latest"]),
        ("eth_getTransactionCount", [sender, "pending"]),
        ("eth_estimateGas", [_estimate_params(tx)]),
    ]
    try:
        answers, fees = batch_with_fees(chain, w3, calls)
        balance, pending = int(answers[0]["result"], 16), int(answers[1]["result"], 16)
        estimate = answers[2].get("result")
        if not isinstance(estimate, str):
            return None
        return _gas_limit(int(estimate, 16)), fees, balance, pending
    except (Web3RPCError, ValueError, KeyError, TypeError, OSError) as exc:
        logger.info("Outbox %s: its reads were not answered together (%s); one at a time", tx.key, exc)
        return None


def _wait_for_gas(tx: OutboxTx, chain: Chain, w3: Web3, *, need: int | None) -> OutboxTx:
    """The signer cannot pay for this transaction now: it waits, queued (no nonce taken, never failed, never the
    reason for a refund); the poller asks again until the balance is topped up."""
    balance = int(w3.eth.get_balance(to_checksum_address(tx.sender)))
    error = f"waiting for gas: the {tx.signer} holds {balance} wei on {chain.name}" + (
        f", this transaction needs up to {need}" if need is not None else ", less than this transaction needs"
    )
    if (
        OutboxTx.objects.filter(pk=tx.pk, status=OutboxTx.Status.QUEUED)
        .exclude(error=error)
        .update(error=error)
    ):
        logger.warning("Outbox %s: %s", tx.key, error)
    tx.refresh_from_db()
    return tx


def broadcast(tx: OutboxTx) -> None:
    """Send the stored bytes (again): the same transaction, the same hash."""
    _, w3 = chain_client(tx)
    try:
        w3.eth.send_raw_transaction(HexStr(tx.raw_tx))
    except (Web3RPCError, ValueError) as exc:
        message = str(exc).lower()
        if not any(reason in message for reason in ALREADY_SENT):
            OutboxTx.objects.filter(pk=tx.pk).update(error=f"broadcast refused: {exc}"[:500])
            logger.warning("Outbox %s: the node refused the broadcast: %s", tx.key, exc)
            return
    _crash_point("after_broadcast")
    OUTBOX.move(
        OutboxTx.objects.filter(pk=tx.pk),
        from_=IN_FLIGHT[1:],
        to=OutboxTx.Status.BROADCAST,
        broadcast_at=timezone.now(),
        broadcasts=F("broadcasts") + 1,
    )
    outbox_broadcast([tx])
