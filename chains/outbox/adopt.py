"""Transactions the service's signers sent that its database does not hold: found on the chain and adopted.

A database restored from a backup (docs/operations.md, "Backups and the restore drill") has forgotten what
was signed after the backup was taken; the chains have not: a signer's count on a chain is ahead of the
database's counter (`SenderNonce`). Signing then at the chain's next nonce would send a second time what was
sent already (a sweep, a delivery, a refund). So before a sender signs anything more on a chain where it is
ahead, its transactions at the nonces the database does not hold are looked for in the chain's latest blocks
(down to the last signature the database remembers, at most OUTBOX_ADOPT_MAX_BLOCKS), and each is:

- a version of a transaction the database holds at that nonce (signed again with a higher fee after the
  backup): its hash is added, and the poller finishes the transaction from its receipt;
- the same effect (to, data, value) as a transaction the database holds queued, not signed yet: that
  transaction takes it (its nonce and hash) and is finished from its receipt, never signed;
- otherwise kept (`AdoptedTx`; staff are told by an incident): the next transaction asked for with the same
  effect within OUTBOX_ADOPT_CLAIM_HOURS of its finding takes it instead of being signed (`claim`): the step
  of an order the backup knew, which the restored service has not reached yet.

Then the counter moves to the chain's count. Transactions of the sender in the nodes' pools, not mined yet,
are waited for (a pool's content cannot be read): the sender signs nothing until they are mined. The same
look is taken before a transaction whose nonce another transaction took is signed again (`repair.sign_again`):
that other transaction may be a version of it that the database forgot.

What is not recognized: a step whose transaction is built from a provider's fresh answer (a relay deposit
carries the provider's request id, and the restored service asks for a new one). The operations guide says
how to restore so that nothing is in that window.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from eth_utils import to_checksum_address
from web3 import Web3

from chains.incidents import incident_record
from chains.models import AdoptedTx, Incident, OutboxTx, SenderNonce
from chains.registry import Chain
from chains.states import OUTBOX

logger = logging.getLogger(__name__)

BLOCKS_PER_BATCH = 50
# Clocks differ: a block's timestamp against the database's time of the last signature.
CLOCK_SKEW = timedelta(minutes=5)


def chain_ahead(chain_id: int, sender: str, pending: int) -> bool:
    """Whether the chain has seen more transactions from `sender` than the database's counter gave out."""
    known = (
        SenderNonce.objects.filter(chain_id=chain_id, address=sender)
        .values_list("next_nonce", flat=True)
        .first()
    )
    return known is not None and pending > known


def _effect(to: str, data: str, value: int) -> tuple[str, str, int]:
    return (to or "").lower(), (data or "0x").lower(), int(value)


def effect_of(tx: OutboxTx | AdoptedTx) -> tuple[str, str, int]:
    return _effect(tx.to, tx.data, int(tx.value))


def adopt_sent(chain: Chain, w3: Web3, *, sender: str, signer: str, held: OutboxTx | None = None) -> bool:
    """Look for `sender`'s transactions on `chain` that the database does not hold and adopt them (module
    docstring); with `held`, also the one at `held`'s nonce. False when the sender has transactions in the
    nodes' pools not mined yet: nothing may be signed for it until they are (ask again later)."""
    sender = to_checksum_address(sender)
    latest = w3.eth.get_transaction_count(sender, "latest")
    if w3.eth.get_transaction_count(sender, "pending") > latest:
        return False
    counter = (
        SenderNonce.objects.filter(chain_id=chain.chain_id, address=sender)
        .values_list("next_nonce", flat=True)
        .first()
    )
    wanted = set(range(counter if counter is not None else latest, latest))
    since: datetime | None = OutboxTx.objects.filter(
        chain_id=chain.chain_id, sender=sender, signed_at__isnull=False
    ).aggregate(last=Max("signed_at"))["last"]
    if held is not None and held.nonce is not None and held.nonce < latest:
        wanted.add(held.nonce)
        if held.signed_at is not None:
            since = min(since or held.signed_at, held.signed_at)
    wanted -= set(
        AdoptedTx.objects.filter(chain_id=chain.chain_id, sender=sender, nonce__in=wanted).values_list(
            "nonce", flat=True
        )
    )
    if not wanted:
        _advance(chain.chain_id, sender, latest)
        return True
    found, looked = _scan(w3, sender, wanted, since - CLOCK_SKEW if since else None)
    raws = _raw_transactions(w3, [found[n]["hash"] for n in sorted(found)])
    adopted: list[AdoptedTx] = []
    with transaction.atomic():
        SenderNonce.objects.get_or_create(
            chain_id=chain.chain_id, address=sender, defaults={"next_nonce": latest}
        )
        SenderNonce.objects.select_for_update().get(chain_id=chain.chain_id, address=sender)
        for nonce in sorted(found):
            record = _adopt_one(
                chain.chain_id, sender, signer, found[nonce], raws.get(found[nonce]["hash"], "")
            )
            if record is not None:
                adopted.append(record)
        _advance(chain.chain_id, sender, latest)
        missing = sorted(wanted - set(found))
        unclaimed = [each for each in adopted if not each.claimed_by]
        if adopted or missing:
            incident_record(
                kind=Incident.Kind.TX_ADOPTED,
                subject=f"sender:{chain.chain_id}:{sender}:{min(wanted)}",
                chain_id=chain.chain_id,
                summary=f"The {signer} ({sender}) on {chain.name} had sent {len(found)} transaction(s) the database "
                f"did not hold (restored from a backup, or the key used elsewhere): "
                f"{len(adopted) - len(unclaimed)} taken by the transactions they were, {len(unclaimed)} kept for "
                f"the next transaction asked with the same effect"
                + (f"; nonces not found in the last {looked} blocks: {missing[:20]}" if missing else ""),
                details={
                    "nonces": sorted(found),
                    "claimed": {str(each.nonce): each.claimed_by for each in adopted if each.claimed_by},
                    "unclaimed": [each.tx_hash for each in unclaimed],
                    "missing": missing[:100],
                },
            )
    logger.warning(
        "Outbox: the %s %s on %s was ahead of the database; %s of its transactions found on the chain, %s "
        "adopted by transactions held, %s kept",
        signer,
        sender,
        chain.name,
        len(found),
        len(adopted) - sum(1 for each in adopted if not each.claimed_by),
        sum(1 for each in adopted if not each.claimed_by),
    )
    return True


def found_as(tx: OutboxTx) -> bool:
    """Whether a transaction found on the chain at `tx`'s nonce was adopted as a version of `tx`."""
    if tx.nonce is None:
        return False
    return AdoptedTx.objects.filter(
        chain_id=tx.chain_id, sender=tx.sender, nonce=tx.nonce, claimed_by=tx.key
    ).exists()


def _advance(chain_id: int, sender: str, latest: int) -> None:
    SenderNonce.objects.filter(chain_id=chain_id, address=sender, next_nonce__lt=latest).update(
        next_nonce=latest
    )


def _scan(w3: Web3, sender: str, wanted: set[int], since: datetime | None) -> tuple[dict[int, dict], int]:
    """({nonce: the transaction as the node gives it} for `wanted`'s nonces found, blocks looked at): from the
    head down, until every one is found, a block older than `since`, or OUTBOX_ADOPT_MAX_BLOCKS."""
    from chains.outbox.receipts import rpc_batch

    found: dict[int, dict] = {}
    head = int(w3.eth.block_number)
    lowest = max(0, head - settings.OUTBOX_ADOPT_MAX_BLOCKS + 1)
    floor = since.timestamp() if since is not None else None
    top, looked, mine = head, 0, sender.lower()
    while top >= lowest and len(found) < len(wanted):
        bottom = max(lowest, top - BLOCKS_PER_BATCH + 1)
        answers = rpc_batch(
            w3, [("eth_getBlockByNumber", [hex(n), True]) for n in range(top, bottom - 1, -1)]
        )
        older = False
        for answer in answers:
            block = answer.get("result")
            if not isinstance(block, dict):
                raise ValueError(f"eth_getBlockByNumber: {str(answer)[:120]}")
            looked += 1
            for item in block.get("transactions") or []:
                if isinstance(item, dict) and str(item.get("from", "")).lower() == mine:
                    nonce = int(item["nonce"], 16)
                    if nonce in wanted:
                        found[nonce] = item
            if floor is not None and int(block["timestamp"], 16) < floor:
                older = True
        if older:
            break
        top = bottom - 1
    return found, looked


def _raw_transactions(w3: Web3, hashes: list[str]) -> dict[str, str]:
    """The signed bytes of each (what a reorg would broadcast again); empty where the node does not say."""
    from chains.outbox.receipts import rpc_batch

    if not hashes:
        return {}
    try:
        answers = rpc_batch(w3, [("eth_getRawTransactionByHash", [h]) for h in hashes])
    except (ValueError, OSError):
        return {}
    return {h: a["result"] for h, a in zip(hashes, answers, strict=True) if isinstance(a.get("result"), str)}


def _adopt_one(chain_id: int, sender: str, signer: str, item: dict[str, Any], raw: str) -> AdoptedTx | None:
    """Adopt one transaction found on the chain (module docstring); its record, or None when the database
    held it already."""
    nonce, tx_hash = int(item["nonce"], 16), str(item["hash"]).lower()
    to = to_checksum_address(item["to"]) if item.get("to") else ""
    effect = _effect(to, item.get("input") or "0x", int(item.get("value") or "0x0", 16))
    at_nonce = list(
        OutboxTx.objects.select_for_update().filter(chain_id=chain_id, sender=sender, nonce=nonce)
    )
    if any(tx_hash in (h.lower() for h in each.hashes) for each in at_nonce):
        return None
    claimed: OutboxTx | None = next(
        (each for each in at_nonce if each.in_flight and effect_of(each) == effect), None
    )
    now = timezone.now()
    signed = {
        "nonce": nonce,
        "tx_hash": tx_hash,
        "raw_tx": raw,
        "gas_limit": int(item["gas"], 16) if item.get("gas") else None,
        "max_fee_per_gas": int(item["maxFeePerGas"], 16) if item.get("maxFeePerGas") else None,
        "max_priority_fee_per_gas": (
            int(item["maxPriorityFeePerGas"], 16) if item.get("maxPriorityFeePerGas") else None
        ),
        "broadcast_at": now,
        "error": "found on the chain: signed before the database was restored",
    }
    if claimed is not None:  # a version the database forgot (a fee bump after the backup)
        OUTBOX.move(
            OutboxTx.objects.filter(pk=claimed.pk),
            from_=(claimed.status,),
            to=OutboxTx.Status.BROADCAST,
            **signed,
            hashes=[*claimed.hashes, tx_hash],
        )
    else:
        queued = (
            OutboxTx.objects.select_for_update(skip_locked=True)
            .filter(
                chain_id=chain_id,
                sender=sender,
                status=OutboxTx.Status.QUEUED,
                nonce__isnull=True,
                value=effect[2],
            )
            .order_by("pk")
        )
        claimed = next((each for each in queued if effect_of(each) == effect), None)
        if claimed is not None:
            OUTBOX.move(
                OutboxTx.objects.filter(pk=claimed.pk),
                from_=(OutboxTx.Status.QUEUED,),
                to=OutboxTx.Status.BROADCAST,
                **signed,
                hashes=[tx_hash],
                signed_at=now,
            )
    record, _ = AdoptedTx.objects.get_or_create(
        chain_id=chain_id,
        sender=sender,
        nonce=nonce,
        defaults={
            "signer": signer,
            "tx_hash": tx_hash,
            "to": to,
            "data": item.get("input") or "0x",
            "value": effect[2],
            "raw_tx": raw,
            "block_number": int(item["blockNumber"], 16),
            "claimed_by": claimed.key if claimed is not None else "",
            "claimed_at": now if claimed is not None else None,
        },
    )
    if claimed is not None:
        logger.warning(
            "Outbox %s: adopted %s (nonce %s), sent before the database was restored",
            claimed.key,
            tx_hash,
            nonce,
        )
    return record


def claim(key: str, fields: dict[str, Any]) -> OutboxTx | None:
    """The transaction for a new `key`, when an adopted one not claimed yet, found within
    OUTBOX_ADOPT_CLAIM_HOURS, had its effect: it becomes `key`'s (in flight, finished from its receipt),
    nothing is signed. Inside the caller's database transaction; None when there is none."""
    candidates = (
        AdoptedTx.objects.select_for_update(skip_locked=True)
        .filter(
            chain_id=fields["chain_id"],
            sender=fields["sender"],
            to=fields["to"],
            claimed_by="",
            found_at__gte=timezone.now() - timedelta(hours=settings.OUTBOX_ADOPT_CLAIM_HOURS),
        )
        .order_by("nonce")
    )
    wanted = _effect(fields["to"], fields["data"], fields["value"])
    record = next((each for each in candidates if effect_of(each) == wanted), None)
    if record is None:
        return None
    now = timezone.now()
    tx = OutboxTx.objects.create(
        key=key,
        **fields,
        status=OutboxTx.Status.BROADCAST,
        nonce=record.nonce,
        tx_hash=record.tx_hash,
        hashes=[record.tx_hash],
        raw_tx=record.raw_tx,
        signed_at=now,
        broadcast_at=now,
        error="found on the chain: sent before the database was restored",
    )
    AdoptedTx.objects.filter(pk=record.pk).update(claimed_by=key, claimed_at=now)
    logger.warning(
        "Outbox %s: took %s (nonce %s), sent before the database was restored",
        key,
        record.tx_hash,
        record.nonce,
    )
    return tx
