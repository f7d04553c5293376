"""What the outbox mends: its transactions that a reorg took off the chain, and nonces that nothing holds.

After a reorg deeper than a chain's confirmations (or a node that forgot
blocks), a transaction the outbox recorded as finished may no longer be on
the chain: its nonce is free again, and every later transaction of its sender
waits behind it. Each poll compares the blocks of the transactions finished
in the chain's last REORG_WINDOW_BLOCKS blocks with the chain's own:

- in another block now (re-included): its block is updated;
- gone, and it had been `mined`: what its owner counted on must happen, so the
  same signed bytes are broadcast again (the same nonce: it can be mined
  once) and it is in flight again; staff are told (an incident), and told
  again if it then reverts;
- gone, and it had `failed`: its owner already acted on the failure (a refund
  tried again under another key, say), so it must not succeed now: its nonce
  is taken by an empty transaction to itself (a nonce filler, under the key
  `nonce:<chain>:<sender>:<nonce>`).

And for each sender with transactions in flight, a nonce between the chain's
count and the lowest of them that none of them holds, for longer than
OUTBOX_REBROADCAST_SECONDS: a `mined` row of the sender's at that nonce left
the chain unnoticed and is sent again as above; any other gap is filled.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from eth_utils import to_checksum_address

from chains.client import block_hashes, web3_for
from chains.handlers import outbox_changed, outbox_handler
from chains.incidents import incident_record
from chains.keys import OwnerKind, Step, kind_key
from chains.models import ChainCursor, Incident, OutboxTx
from chains.outbox import adopt
from chains.outbox.receipts import SenderCounts, chain_client, receipt_logs, receipt_of
from chains.outbox.send import broadcast, outbox_send
from chains.registry import Chain
from chains.states import OUTBOX

logger = logging.getLogger(__name__)
FINISHED = (OutboxTx.Status.MINED, OutboxTx.Status.FAILED)
MAX_FILLS_PER_POLL = 32


def _hex(value) -> str:
    return value.to_0x_hex() if hasattr(value, "to_0x_hex") else str(value)


def recheck_finished(chain: Chain) -> None:
    """Compare the blocks of the chain's recently finished transactions with the chain's (module docstring)."""
    top = (
        OutboxTx.objects.filter(chain_id=chain.chain_id, block_number__isnull=False)
        .order_by("-block_number")
        .values_list("block_number", flat=True)
        .first()
    )
    if top is None:
        return
    known_head = ChainCursor.objects.filter(pk=chain.chain_id).values_list("head", flat=True).first()
    if known_head is not None and top < known_head - settings.REORG_WINDOW_BLOCKS:
        return  # nothing finished recently enough for a reorg to reach (without asking the node)
    w3 = web3_for(chain)
    head = w3.eth.block_number
    recent = list(
        OutboxTx.objects.filter(
            chain_id=chain.chain_id,
            status__in=FINISHED,
            block_number__gte=head - settings.REORG_WINDOW_BLOCKS,
        ).exclude(block_hash="")
    )
    numbers = sorted(
        {tx.block_number for tx in recent if tx.block_number is not None and tx.block_number <= head}
    )
    canonical = block_hashes(w3, numbers)
    for tx in recent:
        if tx.block_number is not None and canonical.get(tx.block_number) == tx.block_hash:
            continue
        receipt = receipt_of(w3, tx)
        if receipt is not None and _hex(receipt["blockHash"]) != tx.block_hash:
            _moved(tx, receipt)
        elif receipt is None:
            left_chain(tx, reason=f"block {tx.block_number} left the chain")


def _moved(tx: OutboxTx, receipt) -> None:
    """Re-included in another block: the same transaction; staff are told if its outcome changed."""
    ok = receipt["status"] == 1
    with transaction.atomic():
        if OutboxTx.objects.filter(pk=tx.pk, block_hash=tx.block_hash).update(
            block_number=receipt["blockNumber"],
            block_hash=_hex(receipt["blockHash"]),
            gas_used=receipt["gasUsed"],
            effective_gas_price=receipt.get("effectiveGasPrice"),
            logs=receipt_logs(receipt),
            tx_hash=_hex(receipt["transactionHash"]),
        ):
            outbox_changed(OutboxTx.objects.get(pk=tx.pk))
    logger.warning("Outbox %s is in block %s now (was %s)", tx.key, receipt["blockNumber"], tx.block_number)
    if ok != (tx.status == OutboxTx.Status.MINED):
        incident_record(
            kind=Incident.Kind.TX_REORGED,
            subject=f"outbox:{tx.key}",
            chain_id=tx.chain_id,
            summary=f"{tx.key} was {tx.status}; a reorg put it in block {receipt['blockNumber']}, where it "
            + ("succeeded" if ok else "reverted"),
            details={"tx_hash": _hex(receipt["transactionHash"]), "nonce": tx.nonce},
        )


def left_chain(tx: OutboxTx, *, reason: str) -> None:
    """A finished transaction is no longer on the chain: sent again (mined) or its nonce filled (failed)."""
    with transaction.atomic():
        locked = OutboxTx.objects.select_for_update().get(pk=tx.pk)
        if locked.status != tx.status or locked.block_hash != tx.block_hash or locked.nonce is None:
            return  # seen to already
        if locked.status == OutboxTx.Status.MINED:
            OUTBOX.move(
                OutboxTx.objects.filter(pk=tx.pk),
                from_=(OutboxTx.Status.MINED,),
                to=OutboxTx.Status.BROADCAST,
                block_number=None,
                block_hash="",
                gas_used=None,
                logs=[],
                finished_at=None,
                broadcast_at=timezone.now(),
                error=f"{reason}: sent again"[:500],
            )
        else:
            OutboxTx.objects.filter(pk=tx.pk).update(
                block_number=None,
                block_hash="",
                error=f"{locked.error}; {reason}: its nonce {locked.nonce} is filled, so it stays failed"[
                    :500
                ],
            )
        outbox_changed(OutboxTx.objects.get(pk=tx.pk))
        incident_record(
            kind=Incident.Kind.TX_REORGED,
            subject=f"outbox:{tx.key}",
            chain_id=tx.chain_id,
            summary=f"{tx.key} ({locked.status}, nonce {locked.nonce}, {locked.tx_hash}): {reason}; "
            + (
                "the same signed transaction is sent again"
                if locked.status == OutboxTx.Status.MINED
                else "its nonce is taken by an empty transaction"
            ),
            details={"tx_hash": locked.tx_hash, "nonce": locked.nonce, "block_number": locked.block_number},
        )
    logger.error("Outbox %s (nonce %s) %s", tx.key, tx.nonce, reason)
    if tx.status == OutboxTx.Status.MINED:
        tx.refresh_from_db()
        broadcast(tx)
    else:
        fill_nonce(chain_id=tx.chain_id, signer=tx.signer, sender=tx.sender, nonce=tx.nonce)


@outbox_handler(OwnerKind.NONCE)  # the outbox's own fillers: `nonce:<chain>:<sender>:<nonce>`
def nonce_filled(tx: OutboxTx) -> None:
    """A filler finished: the transactions behind its nonce can be mined; nobody waits on it."""
    logger.info(
        "Outbox %s: nonce %s of %s on chain %s filled (%s)",
        tx.key,
        tx.nonce,
        tx.sender,
        tx.chain_id,
        tx.status,
    )


def fill_nonce(*, chain_id: int, signer: str, sender: str, nonce: int | None) -> None:
    """An empty transaction from `sender` to itself at exactly `nonce`, once: what lets the ones behind it
    be mined, and what keeps a failed transaction at that nonce from ever being mined."""
    if nonce is None:
        return
    sender = to_checksum_address(sender)
    tx, created = OutboxTx.objects.get_or_create(
        key=kind_key(OwnerKind.NONCE, Step.NONCE, chain_id, sender, nonce),
        defaults={
            "chain_id": chain_id,
            "signer": signer,
            "sender": sender,
            "to": sender,
            "data": "0x",
            "value": 0,
            "nonce": nonce,
        },
    )
    if created:
        logger.warning(
            "Outbox: nonce %s of %s on chain %s is free; filled by %s", nonce, sender, chain_id, tx.key
        )
        outbox_send(tx.pk)


def fill_nonce_gaps(chain: Chain, counts: SenderCounts) -> None:
    """Per sender with transactions in flight: the nonces below them that nothing holds (module docstring)."""
    in_flight = OutboxTx.objects.filter(
        chain_id=chain.chain_id,
        status__in=(OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST),
        nonce__isnull=False,
    )
    by_sender: dict[tuple[str, str], list[OutboxTx]] = defaultdict(list)
    for tx in in_flight:
        by_sender[(tx.sender, tx.signer)].append(tx)
    settle = timedelta(seconds=settings.OUTBOX_REBROADCAST_SECONDS)
    now = timezone.now()
    for (sender, signer), txs in by_sender.items():
        lowest = min(txs, key=lambda tx: tx.nonce or 0)
        if now - (lowest.broadcast_at or lowest.signed_at or now) < settle:
            continue  # give the node time to see it
        latest = counts.latest(web3_for(chain), lowest)
        held = {tx.nonce for tx in txs}
        gaps = [n for n in range(latest, lowest.nonce or 0) if n not in held][:MAX_FILLS_PER_POLL]
        for nonce in gaps:
            mined = (
                OutboxTx.objects.filter(
                    chain_id=chain.chain_id, sender=sender, nonce=nonce, status=OutboxTx.Status.MINED
                )
                .exclude(block_hash="")  # a devnet's previous life, or mined before blocks were kept
                .first()
            )
            if mined is not None:
                left_chain(mined, reason=f"its nonce {nonce} is free on the chain again")
            else:
                fill_nonce(chain_id=chain.chain_id, signer=signer, sender=sender, nonce=nonce)


def sign_again(tx: OutboxTx, *, latest: int) -> None:
    """Another transaction took this one's nonce, and no version of it was mined (nor can be now): it is
    signed again at a new nonce: unless it is a version of this one the database forgot (restored from a
    backup: chains/outbox/adopt.py), which is then finished from its receipt.

    The caller saw no receipt, then a count past the nonce; the block may have come in between, so the
    receipts are asked for again here, after the count: only then does no receipt mean another took it."""
    chain, w3 = chain_client(tx)
    if not adopt.adopt_sent(chain, w3, sender=tx.sender, signer=tx.signer, held=tx):
        return  # the sender's transactions in the nodes' pools first
    tx.refresh_from_db()
    if tx.status != OutboxTx.Status.BROADCAST or tx.nonce is None or tx.nonce >= latest:
        return
    if adopt.found_as(tx):
        return  # its version on the chain was found: the poller finishes it
    if receipt_of(w3, tx) is not None:
        return  # mined between the poller's look for its receipt and its look at the count: the poller finishes it
    with transaction.atomic():
        locked = OutboxTx.objects.select_for_update().get(pk=tx.pk)
        if locked.status != OutboxTx.Status.BROADCAST or locked.nonce != tx.nonce:
            return
        OUTBOX.move(
            OutboxTx.objects.filter(pk=tx.pk),
            from_=(OutboxTx.Status.BROADCAST,),
            to=OutboxTx.Status.QUEUED,
            nonce=None,
            raw_tx="",
            signed_at=None,
            broadcast_at=None,
            error=f"its nonce {tx.nonce} was taken by another transaction (the sender's count is {latest}); "
            "signed again",
        )
    logger.error("Outbox %s: nonce %s was taken by another transaction; signing it again", tx.key, tx.nonce)
    outbox_send(tx.pk)
