"""The outbox's poller (a periodic task): each in-flight transaction looked at once, then each chain's recent
past checked for reorgs and nonce gaps (chains/outbox/repair.py).

One look at an in-flight transaction:

- queued for longer than OUTBOX_RESEND_AFTER_SECONDS: its task was lost (or
  its worker killed before it signed); it is signed now;
- a receipt with the chain's confirmations: `mined`, or `failed` when it
  reverted; the outcome goes to its owner (send.finish);
- signed but not known to be broadcast: the same bytes are broadcast;
- unmined while the sender's count on the chain has passed its nonce: another
  transaction took the nonce and no version of this one can be mined any more;
  after OUTBOX_REBROADCAST_SECONDS it is signed again at a new nonce;
- unmined for OUTBOX_FEE_BUMP_SECONDS while it is next in line (its nonce is
  the sender's count): re-signed with a fee OUTBOX_FEE_BUMP_PERCENT higher, at
  the same nonce, so that only one version can be mined, never above the
  chain's fee cap (staff are told once it is reached); a transaction waiting
  behind a lower nonce is never bumped, since no fee would help it;
- otherwise unmined for OUTBOX_REBROADCAST_SECONDS: broadcast again.

Between full polls, beat sends a quick look at the receipts of broadcast transactions alone
(`outbox_check_receipts`, every OUTBOX_RECEIPT_POLL_SECONDS), so that an outcome is known soon after its
block. Whichever of the two sees a receipt first finishes the transaction; `finish` records it once. A
pass that finds more than OUTBOX_FINISH_HERE confirmed transactions on a chain (a burst's deliveries and
sweeps) also queues one `outbox_finish_task` each to the chain's workers, who read the receipt again and
share the finishing with the pass; a transaction one process is finishing is passed by by the others. So
are more than OUTBOX_FINISH_HERE transactions in a block and not yet confirmed (`outbox_included_task`: a
burst's deliveries from inventory, each of which executes its order).

A worker killed at any point leaves a row the poller finishes: queued (signed
later, once), signed (the same bytes broadcast), broadcast (its receipt read).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from django.utils import timezone
from web3 import Web3
from web3.exceptions import Web3RPCError

from chains.handlers import outbox_included
from chains.incidents import incident_record
from chains.models import Incident, OutboxTx
from chains.outbox import repair
from chains.outbox.fees import fees_for
from chains.outbox.receipts import (
    SenderCounts,
    chain_client,
    hex_of,
    receipt_of,
    receipts_and_head,
    replayed_revert,
    told_in_block,
)
from chains.outbox.send import broadcast, finish, outbox_send, sign_version
from chains.registry import Chain, chains
from chains.signers import SignerUnavailable
from chains.states import IN_FLIGHT, OUTBOX
from core.tasks import Later

OUTBOX_FINISH_TASK = Later("chains.tasks.outbox_finish_task")
OUTBOX_INCLUDED_TASK = Later("chains.tasks.outbox_included_task")

logger = logging.getLogger(__name__)


def _bump_fee(tx: OutboxTx, chain: Chain, w3: Web3) -> None:
    """Re-sign the same nonce with a higher fee: whichever version is mined, only one can be."""
    fees = fees_for(chain, w3, bump_from=tx)
    if fees is None:
        incident_record(
            kind=Incident.Kind.FEE_CAP,
            subject=f"outbox:{tx.key}",
            chain_id=tx.chain_id,
            summary=f"{tx.key} has waited unmined at the {chain.name} fee cap ({tx.max_fee_per_gas} wei per gas); "
            "it is broadcast again but not outbid",
            details={"nonce": tx.nonce, "tx_hash": tx.tx_hash},
        )
        broadcast(tx)
        return
    with transaction.atomic():
        locked = OutboxTx.objects.select_for_update().get(pk=tx.pk)
        if locked.status not in IN_FLIGHT[1:] or locked.nonce is None or locked.tx_hash != tx.tx_hash:
            return
        raw, tx_hash = sign_version(locked, nonce=locked.nonce, gas=locked.gas_limit or 0, fees=fees)
        OUTBOX.move(
            OutboxTx.objects.filter(pk=tx.pk),
            from_=(locked.status,),
            to=OutboxTx.Status.SIGNED,
            raw_tx=raw,
            tx_hash=tx_hash,
            hashes=[*locked.hashes, tx_hash],
            max_fee_per_gas=fees[0],
            max_priority_fee_per_gas=fees[1],
            signed_at=timezone.now(),
        )
    logger.warning(
        "Outbox %s: unmined for %s s, fee raised to %s as %s",
        tx.key,
        settings.OUTBOX_FEE_BUMP_SECONDS,
        fees[0],
        tx_hash,
    )
    tx.refresh_from_db()
    broadcast(tx)


def _finish_if_confirmed(
    tx: OutboxTx, chain: Chain, w3: Web3, receipt, *, head: int | None = None, unless_taken: bool = False
) -> bool:
    if receipt["blockNumber"] > chain.confirmed_through(w3.eth.block_number if head is None else head):
        return False
    ok = receipt["status"] == 1
    error = "" if ok else f"reverted: {replayed_revert(w3, tx, receipt['blockNumber'])}"
    status = OutboxTx.Status.MINED if ok else OutboxTx.Status.FAILED
    return (
        finish(tx, status=status, error=error, receipt=receipt, unless_taken=unless_taken) or not unless_taken
    )


def _queue_finishes(txs: list[OutboxTx], receipts: dict[int, Any], chain: Chain, head: int) -> bool:
    """Queue the finishing of a pass's confirmed transactions to the chain's workers, one task each, when
    there are more than OUTBOX_FINISH_HERE (a burst's deliveries and sweeps); whether it did. The pass
    finishes them too: whichever process takes one first finishes it (and the order it ends), the others pass
    it by. One after another in the pass, a burst's last delivery was finished a second after its first."""
    confirmed = [
        tx
        for tx in txs
        if tx.pk in receipts and receipts[tx.pk]["blockNumber"] <= chain.confirmed_through(head)
    ]
    if len(confirmed) <= settings.OUTBOX_FINISH_HERE:
        return False
    try:
        for tx in confirmed:
            OUTBOX_FINISH_TASK.delay(tx.pk)
    except Exception as exc:  # no broker: the pass finishes every one
        logger.warning("Outbox finishes not queued (%s): finished here", exc.__class__.__name__)
        return False
    return True


def outbox_finish(tx_id: int) -> bool:
    """Finish one broadcast transaction from its receipt, read now, if it has its chain's confirmations and no
    other process is finishing it; whether this did."""
    tx = OutboxTx.objects.filter(pk=tx_id, status=OutboxTx.Status.BROADCAST).first()
    if tx is None:
        return False
    chain, w3 = chain_client(tx)
    receipts, head = receipts_and_head(w3, [tx])
    if tx.pk not in receipts:
        return False
    return _finish_if_confirmed(tx, chain, w3, receipts[tx.pk], head=head, unless_taken=True)


def outbox_check_receipts(
    *, chain_id: int | None = None, limit: int = 200, skip_chains: Collection[int] = ()
) -> int:
    """Finish each broadcast transaction (on `chain_id`, or every chain) whose receipt has its chain's
    confirmations; how many were finished. Only receipts: the full poll does everything else (rebroadcasts,
    fee bumps, lost sends, repairs). Each chain's receipts and head are one JSON-RPC batch (a burst is many
    receipts on one chain). Finishing is a conditional update, so two of these at once finish a transaction
    once."""
    broadcast_txs = OutboxTx.objects.filter(status=OutboxTx.Status.BROADCAST).exclude(
        chain_id__in=skip_chains
    )
    if chain_id is not None:
        broadcast_txs = broadcast_txs.filter(chain_id=chain_id)
    by_chain: dict[int, list[OutboxTx]] = {}
    for tx in broadcast_txs.order_by("broadcast_at")[:limit]:
        by_chain.setdefault(tx.chain_id, []).append(tx)
    finished = 0
    for txs in by_chain.values():
        try:
            chain, w3 = chain_client(txs[0])
            receipts, head = receipts_and_head(w3, txs)
        except (Web3RPCError, ValueError, OSError) as exc:  # the full poll will look again
            logger.info("Outbox receipts on chain %s not read (%s)", txs[0].chain_id, exc)
            continue
        included = []
        shared = _queue_finishes(txs, receipts, chain, head)
        for tx in txs:
            if tx.pk not in receipts:
                continue
            try:
                if receipts[tx.pk]["blockNumber"] > chain.confirmed_through(head):
                    if receipts[tx.pk]["status"] == 1:
                        included.append((tx, hex_of(receipts[tx.pk]["transactionHash"])))
                elif _finish_if_confirmed(tx, chain, w3, receipts[tx.pk], head=head, unless_taken=shared):
                    finished += 1
            except (Web3RPCError, ValueError, OSError) as exc:
                logger.info("Outbox %s on chain %s: not finished (%s)", tx.key, tx.chain_id, exc)
        _tell_included(included, shared=_queue_included(included))
    return finished


def _queue_included(included: list[tuple[OutboxTx, str]]) -> bool:
    """Queue the telling of a pass's transactions that are in a block, not yet confirmed, to the chain's
    workers, one task each, when there are more than OUTBOX_FINISH_HERE (a burst's deliveries: each executes
    its order); whether it did. The pass tells them too, from the last: one after another, a burst's last
    delivery was executed seconds after its block."""
    if len(included) <= settings.OUTBOX_FINISH_HERE:
        return False
    try:
        # Once each: the next passes, while it waits for its confirmations, tell it themselves.
        for tx, tx_hash in included:
            if caches["shared"].add(f"outbox-included:{tx.pk}:{tx_hash}", 1, timeout=300):
                OUTBOX_INCLUDED_TASK.delay(tx.pk)
    except Exception as exc:  # no broker: the pass tells every one
        logger.warning("Outbox inclusions not queued (%s): told here", exc.__class__.__name__)
        return False
    return True


def _tell_included(included: list[tuple[OutboxTx, str]], *, shared: bool) -> None:
    """Tell each transaction's owner that it is in a block and succeeded there (an owner that can move on at
    once does); shared with the chain's workers, from the other end of the list. An owner told twice moves
    once (the order it moves is locked and its status checked)."""
    for tx, tx_hash in reversed(included) if shared else included:
        try:
            with told_in_block(tx, tx_hash):
                outbox_included(tx)
        except Exception:  # its outcome, when confirmed, tells the owner again
            logger.exception("Outbox %s: its owner could not be told it is in a block", tx.key)


def outbox_included_now(tx_id: int) -> bool:
    """Tell the owner of one broadcast transaction that it is in a block, if its receipt, read now, says so
    and it succeeded (not yet confirmed: a confirmed one is finished instead); whether it was told."""
    tx = OutboxTx.objects.filter(pk=tx_id, status=OutboxTx.Status.BROADCAST).first()
    if tx is None:
        return False
    chain, w3 = chain_client(tx)
    receipts, head = receipts_and_head(w3, [tx])
    receipt = receipts.get(tx.pk)
    if receipt is None or receipt["status"] != 1:
        return False
    if receipt["blockNumber"] <= chain.confirmed_through(head):
        return _finish_if_confirmed(tx, chain, w3, receipt, head=head, unless_taken=True)
    with told_in_block(tx, hex_of(receipt["transactionHash"])):
        outbox_included(tx)
    return True


def outbox_check(tx: OutboxTx, counts: SenderCounts | None = None) -> None:
    """One look at one in-flight transaction (see the module's docstring)."""
    now = timezone.now()
    if tx.status == OutboxTx.Status.QUEUED:
        if tx.created_at <= now - timedelta(seconds=settings.OUTBOX_RESEND_AFTER_SECONDS):
            outbox_send(tx.pk)  # its task was lost (or its worker killed before it signed)
        return
    chain, w3 = chain_client(tx)
    receipt = receipt_of(w3, tx)
    if receipt is not None:
        _finish_if_confirmed(tx, chain, w3, receipt, head=counts.head(w3, tx.chain_id) if counts else None)
        return
    if tx.status == OutboxTx.Status.SIGNED:
        broadcast(tx)  # signed but never (known to be) broadcast: the same bytes, the same hash
        return
    latest = (counts or SenderCounts()).latest(w3, tx)
    unmined_for = now - (tx.broadcast_at or tx.signed_at or now)
    if tx.nonce is not None and tx.nonce < latest:
        if unmined_for >= timedelta(seconds=settings.OUTBOX_REBROADCAST_SECONDS):
            repair.sign_again(tx, latest=latest)  # its nonce went to another transaction
        return
    if (
        tx.nonce == latest
        and tx.signed_at
        and tx.signed_at <= now - timedelta(seconds=settings.OUTBOX_FEE_BUMP_SECONDS)
    ):
        _bump_fee(tx, chain, w3)
    elif tx.broadcast_at and tx.broadcast_at <= now - timedelta(seconds=settings.OUTBOX_REBROADCAST_SECONDS):
        broadcast(tx)


def outbox_poll(*, limit: int = 500, skip_chains: Collection[int] = ()) -> int:
    """Look at every in-flight transaction once, then at each chain's recent past; how many were looked at.
    `skip_chains`: those of another family (chains.families), which polls its own."""
    counts = SenderCounts()
    in_flight = list(
        OutboxTx.objects.filter(status__in=IN_FLIGHT)
        .exclude(chain_id__in=skip_chains)
        .order_by("created_at")[:limit]
    )
    for tx in in_flight:
        try:
            outbox_check(tx, counts)
        except SignerUnavailable as exc:
            logger.error("Outbox %s cannot be signed here: %s", tx.key, exc)
        except (Web3RPCError, ValueError, OSError) as exc:  # one chain down must not stop the others
            logger.warning("Outbox %s on chain %s: %s", tx.key, tx.chain_id, exc)
    for chain in chains():
        if not chain.rpc_urls or chain.chain_id in skip_chains:
            continue
        try:
            repair.recheck_finished(chain)
            repair.fill_nonce_gaps(chain, counts)
        except SignerUnavailable as exc:
            logger.error("Outbox repairs on %s cannot be signed here: %s", chain.name, exc)
        except (Web3RPCError, ValueError, OSError) as exc:
            logger.warning("Outbox repairs on %s: %s", chain.name, exc)
    return len(in_flight)
