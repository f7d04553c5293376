"""The transaction outbox: every on-chain transaction the service sends, sent once.

A caller asks for a transaction with `outbox_submit(key=...)` inside its own
database transaction. The business key (for example `order:<id>:sweep`) is
unique, so asking twice, from a retried task or a second worker, returns the
same row and never sends a second transaction. Then, in a worker:

1. **sign** (`outbox_send`): estimate the gas (a call that would revert is
   marked failed and never sent); under the row locks of the transaction and
   of its sender's nonce on that chain, take the next nonce, sign with the
   role's key (chains/signers.py) and store the raw transaction and its hash
   before anything is broadcast;
2. **broadcast** the stored bytes; the node answering "already known" or
   "nonce too low" is not an error: the receipt will tell;
3. **poll** (`outbox_poll`, a periodic task): record receipts once they have
   the chain's confirmations (`mined`, or `failed` when reverted), broadcast
   again what is still unmined after OUTBOX_REBROADCAST_SECONDS, re-sign
   with a higher fee (the same nonce, so only one version can be mined) what
   is unmined after OUTBOX_FEE_BUMP_SECONDS, and sign what a lost task left
   queued. A finished transaction is handed to CHAIN_OUTBOX_HANDLER in the
   transaction that records it.

A worker killed at any point leaves a row the poller finishes: queued (signed
later, once), signed (the same bytes broadcast), broadcast (its receipt
read). The nonce is taken in the same database transaction that stores the
signed bytes, so it is never used by two transactions nor skipped.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.module_loading import import_string
from eth_typing import HexStr
from eth_utils import to_checksum_address
from web3 import Web3
from web3.exceptions import ContractLogicError, TransactionNotFound, Web3RPCError

from chains.artifacts import ERC20, encode_call
from chains.client import web3_for
from chains.evm import ZERO_ADDRESS, deposit_salt
from chains.models import OutboxTx, SenderNonce
from chains.registry import Chain, chain_get
from chains.signers import SignerUnavailable, signer_account, signer_address

logger = logging.getLogger(__name__)

IN_FLIGHT = (OutboxTx.Status.QUEUED, OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST)
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
    fields: dict[str, Any] = {"chain_id": chain_id, "signer": signer, "sender": to_checksum_address(sender),
              "to": to_checksum_address(to), "data": data or "0x", "value": value}  # fmt: skip
    with transaction.atomic():
        tx, created = OutboxTx.objects.get_or_create(key=key, defaults=fields)
        if not created:
            asked = (tx.chain_id, tx.signer, tx.to.lower(), tx.data.lower(), int(tx.value))
            if asked != (chain_id, signer, fields["to"].lower(), fields["data"].lower(), value):
                raise OutboxConflict(f"{key} was asked for with another transaction")
            return tx
        tx_id = tx.pk
        transaction.on_commit(lambda: _enqueue_send(tx_id))
    return tx


def outbox_sweep(*, key: str, chain_id: int, kind: str, identifier: str, token: str) -> OutboxTx:
    """The chain's deposit factory moves what the deposit address of (kind, identifier) holds of `token` (the
    zero address: native coin) into the vault. Asked for once per key, like every outbox transaction."""
    chain = chain_get(chain_id)
    if chain is None or not chain.factory_address:
        raise ValueError(f"chain {chain_id} has no deposit factory")
    data = encode_call("DepositFactory", "sweep", deposit_salt(kind=kind, identifier=identifier), token,
                       signer_address("vault"))  # fmt: skip
    return outbox_submit(key=key, chain_id=chain_id, signer="vault", to=chain.factory_address, data=data)


def outbox_transfer(*, key: str, chain_id: int, signer: str, token: str, to: str, amount: int) -> OutboxTx:
    """`amount` of `token` (the zero address: native coin) from the signer to `to`, once per key."""
    to = to_checksum_address(to)
    if token == ZERO_ADDRESS:
        return outbox_submit(key=key, chain_id=chain_id, signer=signer, to=to, value=amount)
    return outbox_submit(
        key=key, chain_id=chain_id, signer=signer, to=token, data=encode_call(ERC20, "transfer", to, amount)
    )


def _enqueue_send(tx_id: int) -> None:
    from chains.tasks import outbox_send_task

    outbox_send_task.delay(tx_id)


def _crash_point(name: str) -> None:
    """The suite's kill-the-worker tests end the process here (OUTBOX_CRASH_AT; development only)."""
    if name == settings.OUTBOX_CRASH_AT:
        logger.warning("OUTBOX_CRASH_AT=%s: exiting as a killed worker would", name)
        os._exit(137)


def outbox_send(tx_id: int) -> OutboxTx | None:
    """Sign (once) and broadcast one transaction; safe to run again at any time."""
    tx = OutboxTx.objects.filter(pk=tx_id).first()
    if tx is None:
        logger.warning("Outbox transaction %s is gone: nothing to send", tx_id)
        return None
    if tx.status == OutboxTx.Status.QUEUED:
        tx = _sign(tx)
    if tx.status in (OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST):
        _broadcast(tx)
    return tx


def _chain(tx: OutboxTx) -> tuple[Chain, Web3]:
    chain = chain_get(tx.chain_id)
    if chain is None:
        raise ValueError(f"chain {tx.chain_id} is not in the registry")
    return chain, web3_for(chain)


def _call(tx: OutboxTx) -> dict:
    return {"from": tx.sender, "to": tx.to, "data": tx.data, "value": int(tx.value)}


def _fees(w3: Web3, *, bump_from: OutboxTx | None = None) -> tuple[int, int]:
    """(maxFeePerGas, maxPriorityFeePerGas) for now; at least the bump over `bump_from`'s fees."""
    base = int(w3.eth.get_block("latest").get("baseFeePerGas") or 0)
    priority = int(w3.eth.max_priority_fee)
    max_fee = 2 * base + priority
    if bump_from is not None and bump_from.max_fee_per_gas is not None:
        factor = 100 + settings.OUTBOX_FEE_BUMP_PERCENT
        priority = max(priority, -(-int(bump_from.max_priority_fee_per_gas or 0) * factor // 100), 1)
        max_fee = max(max_fee, -(-int(bump_from.max_fee_per_gas) * factor // 100), priority)
    return max_fee, priority


def _signed(tx: OutboxTx, *, nonce: int, gas: int, fees: tuple[int, int]) -> tuple[str, str]:
    account = signer_account(tx.signer)
    signed = account.sign_transaction(
        cast(
            Any,
            {
                "type": 2,
                "chainId": tx.chain_id,
                "nonce": nonce,
                "to": tx.to,
                "data": tx.data,
                "value": int(tx.value),
                "gas": gas,
                "maxFeePerGas": fees[0],
                "maxPriorityFeePerGas": fees[1],
            },
        )
    )
    return "0x" + signed.raw_transaction.hex(), "0x" + signed.hash.hex()


def _finish(tx: OutboxTx, *, status: str, error: str = "", receipt=None) -> bool:
    """Record the outcome once and hand it to CHAIN_OUTBOX_HANDLER in the same transaction."""
    fields = {"status": status, "error": error[:500], "finished_at": timezone.now()}
    if receipt is not None:
        fields |= {"tx_hash": receipt["transactionHash"].to_0x_hex(), "block_number": receipt["blockNumber"],
                   "gas_used": receipt["gasUsed"]}  # fmt: skip
    with transaction.atomic():
        if not OutboxTx.objects.filter(pk=tx.pk, status__in=IN_FLIGHT).update(**fields):
            return False
        tx.refresh_from_db()
        import_string(settings.CHAIN_OUTBOX_HANDLER)(tx)
    log = logger.info if status == OutboxTx.Status.MINED else logger.warning
    log("Outbox %s on chain %s: %s %s %s", tx.key, tx.chain_id, status, tx.tx_hash, error)
    return True


def _sign(tx: OutboxTx) -> OutboxTx:
    chain, w3 = _chain(tx)
    try:
        gas = w3.eth.estimate_gas(_call(tx))  # type: ignore[arg-type]
    except ContractLogicError as exc:
        _finish(tx, status=OutboxTx.Status.FAILED, error=f"would revert: {exc.message or exc}")
        tx.refresh_from_db()
        return tx
    # Headroom: state may change between the estimate and the block (a storage slot set from zero costs 20,000
    # gas more than one changed), and an unused limit costs nothing.
    gas = gas * 12 // 10 + 20_000
    fees = _fees(w3)
    pending = w3.eth.get_transaction_count(to_checksum_address(tx.sender), "pending")
    _crash_point("before_sign")
    with transaction.atomic():
        tx = OutboxTx.objects.select_for_update().get(pk=tx.pk)
        if tx.status != OutboxTx.Status.QUEUED:
            return tx  # another worker signed it meanwhile
        SenderNonce.objects.get_or_create(
            chain_id=tx.chain_id, address=tx.sender, defaults={"next_nonce": pending}
        )
        nonce_row = SenderNonce.objects.select_for_update().get(chain_id=tx.chain_id, address=tx.sender)
        # Never below what the chain has seen from this key (a key used elsewhere too).
        nonce = max(nonce_row.next_nonce, pending)
        raw, tx_hash = _signed(tx, nonce=nonce, gas=gas, fees=fees)
        SenderNonce.objects.filter(pk=nonce_row.pk).update(next_nonce=nonce + 1)
        OutboxTx.objects.filter(pk=tx.pk).update(
            status=OutboxTx.Status.SIGNED, nonce=nonce, gas_limit=gas, max_fee_per_gas=fees[0],
            max_priority_fee_per_gas=fees[1], raw_tx=raw, tx_hash=tx_hash, hashes=[tx_hash],
            signed_at=timezone.now(),
        )  # fmt: skip
    logger.info("Outbox %s on %s: signed nonce %s as %s", tx.key, chain.name, nonce, tx_hash)
    _crash_point("after_sign")
    tx.refresh_from_db()
    return tx


def _broadcast(tx: OutboxTx) -> None:
    _, w3 = _chain(tx)
    try:
        w3.eth.send_raw_transaction(HexStr(tx.raw_tx))
    except (Web3RPCError, ValueError) as exc:
        message = str(exc).lower()
        if not any(reason in message for reason in ALREADY_SENT):
            OutboxTx.objects.filter(pk=tx.pk).update(error=f"broadcast refused: {exc}"[:500])
            logger.warning("Outbox %s: the node refused the broadcast: %s", tx.key, exc)
            return
    _crash_point("after_broadcast")
    OutboxTx.objects.filter(pk=tx.pk, status__in=IN_FLIGHT[1:]).update(
        status=OutboxTx.Status.BROADCAST, broadcast_at=timezone.now(), broadcasts=F("broadcasts") + 1
    )


def _receipt(w3: Web3, tx: OutboxTx):
    for tx_hash in reversed(tx.hashes):
        try:
            return w3.eth.get_transaction_receipt(tx_hash)
        except TransactionNotFound:
            continue
    return None


def _bump_fee(tx: OutboxTx, w3: Web3) -> None:
    """Re-sign the same nonce with a higher fee: whichever version is mined, only one can be."""
    fees = _fees(w3, bump_from=tx)
    with transaction.atomic():
        locked = OutboxTx.objects.select_for_update().get(pk=tx.pk)
        if locked.status not in IN_FLIGHT[1:] or locked.nonce is None or locked.tx_hash != tx.tx_hash:
            return
        raw, tx_hash = _signed(locked, nonce=locked.nonce, gas=locked.gas_limit or 0, fees=fees)
        OutboxTx.objects.filter(pk=tx.pk).update(
            raw_tx=raw, tx_hash=tx_hash, hashes=[*locked.hashes, tx_hash], max_fee_per_gas=fees[0],
            max_priority_fee_per_gas=fees[1], signed_at=timezone.now(), status=OutboxTx.Status.SIGNED,
        )  # fmt: skip
    logger.warning("Outbox %s: unmined for %s s, fee raised to %s as %s", tx.key,
                   settings.OUTBOX_FEE_BUMP_SECONDS, fees[0], tx_hash)  # fmt: skip
    tx.refresh_from_db()
    _broadcast(tx)


def outbox_check(tx: OutboxTx) -> None:
    """One look at one in-flight transaction (see the module's docstring, step 3)."""
    now = timezone.now()
    if tx.status == OutboxTx.Status.QUEUED:
        if tx.created_at <= now - timedelta(seconds=settings.OUTBOX_RESEND_AFTER_SECONDS):
            outbox_send(tx.pk)  # its task was lost (or its worker killed before it signed)
        return
    chain, w3 = _chain(tx)
    receipt = _receipt(w3, tx)
    if receipt is not None:
        if w3.eth.block_number - receipt["blockNumber"] + 1 >= max(chain.confirmations, 1):
            ok = receipt["status"] == 1
            _finish(tx, status=OutboxTx.Status.MINED if ok else OutboxTx.Status.FAILED,
                    error="" if ok else "reverted", receipt=receipt)  # fmt: skip
        return
    if tx.status == OutboxTx.Status.SIGNED:
        _broadcast(tx)  # signed but never (known to be) broadcast: the same bytes, the same hash
        return
    if tx.signed_at and tx.signed_at <= now - timedelta(seconds=settings.OUTBOX_FEE_BUMP_SECONDS):
        _bump_fee(tx, w3)
    elif tx.broadcast_at and tx.broadcast_at <= now - timedelta(seconds=settings.OUTBOX_REBROADCAST_SECONDS):
        _broadcast(tx)


def outbox_poll(*, limit: int = 500) -> int:
    """Look at every in-flight transaction once (the periodic task); how many were looked at."""
    seen = 0
    for tx in OutboxTx.objects.filter(status__in=IN_FLIGHT).order_by("created_at")[:limit]:
        seen += 1
        try:
            outbox_check(tx)
        except SignerUnavailable as exc:
            logger.error("Outbox %s cannot be signed here: %s", tx.key, exc)
        except (Web3RPCError, ValueError, OSError) as exc:  # one chain down must not stop the others
            logger.warning("Outbox %s on chain %s: %s", tx.key, tx.chain_id, exc)
    return seen
