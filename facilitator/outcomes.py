"""What the chain did with an x402 settlement: its transaction in a block (`settlement_included`), finished
(`settlement_finished`: settled, or failed unless someone else's transaction used the same authorization and
moved what it authorized, found by its `AuthorizationUsed` event, `used_by`)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.utils import timezone
from web3.exceptions import Web3Exception

from chains.client import web3_for
from chains.eip3009 import (
    AUTHORIZATION_USED_TOPIC,
)
from chains.evm import to_checksum_address
from chains.keys import Step
from chains.models import OutboxTx
from chains.registry import chain_get
from facilitator import protocol
from facilitator.models import Settlement
from facilitator.states import SETTLEMENT

logger = logging.getLogger(__name__)


TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


def used_by(chain_id: int, token: str, payer: str, to: str, value: int, nonce: str) -> tuple[str, int] | None:
    """(transaction hash, block) of a successful transaction that used this authorization (its
    `AuthorizationUsed` event) and moved what it authorized (a Transfer of `value` from `payer` to `to` on
    `token`), or None."""
    chain = chain_get(chain_id)
    if chain is None:
        return None
    w3 = web3_for(chain)
    try:
        logs = w3.eth.get_logs(
            {
                "address": to_checksum_address(token),
                "fromBlock": 0,
                "toBlock": "latest",
                "topics": [AUTHORIZATION_USED_TOPIC, "0x" + "0" * 24 + payer[2:].lower(), nonce],
            }
        )
        for log in logs:
            receipt = w3.eth.get_transaction_receipt(log["transactionHash"])
            if receipt["status"] == 1 and _moved(receipt, token, payer, to, value):
                return "0x" + bytes(log["transactionHash"]).hex(), int(receipt["blockNumber"])
    except (Web3Exception, ValueError, OSError, KeyError) as exc:
        logger.warning("x402: looking for the use of %s's nonce %s failed: %s", payer, nonce, exc)
    return None


def _moved(receipt: Any, token: str, payer: str, to: str, value: int) -> bool:
    for log in receipt["logs"]:
        topics = ["0x" + bytes(topic).hex() for topic in log["topics"]]
        if (
            log["address"].lower() == token.lower()
            and len(topics) == 3
            and topics[0] == TRANSFER_TOPIC
            and topics[1][-40:] == payer[2:].lower()
            and topics[2][-40:] == to[2:].lower()
            and int.from_bytes(bytes(log["data"]), "big") == value
        ):
            return True
    return False


def settlement_of(tx: OutboxTx) -> Settlement | None:
    """The settlement an outbox transaction's key (`x402:<id>:settle`) names."""
    key = tx.parsed_key
    identifier = key.id if key.is_(Step.SETTLE) else ""
    try:
        return Settlement.objects.filter(pk=uuid.UUID(identifier)).first()
    except ValueError:
        return None


def settlement_included(tx: OutboxTx) -> None:
    """Its transaction is in a block and succeeded there: a settle request waiting on it answers now."""
    row = settlement_of(tx)
    if row is not None:
        SETTLEMENT.move(
            Settlement.objects.filter(pk=row.pk),
            from_=(Settlement.Status.PENDING,),
            to=Settlement.Status.INCLUDED,
            tx_hash=tx.tx_hash,
            block_number=tx.block_number,
        )


def settlement_finished(tx: OutboxTx) -> None:
    """Its transaction finished: confirmed (settled), or failed (it would revert, or reverted). A failure whose
    authorization someone else used first is counted with their transaction."""
    row = settlement_of(tx)
    if row is None:
        logger.warning("x402: outbox %s finished, but no settlement has its key", tx.key)
        return
    if tx.status == OutboxTx.Status.MINED:
        SETTLEMENT.move(
            Settlement.objects.filter(pk=row.pk),
            to=Settlement.Status.SETTLED,
            tx_hash=tx.tx_hash,
            block_number=tx.block_number,
            finished_at=timezone.now(),
        )
        return
    elsewhere = used_by(row.chain_id, row.token, row.payer, row.pay_to, int(row.value), row.nonce)
    if elsewhere is not None:
        SETTLEMENT.move(
            Settlement.objects.filter(pk=row.pk),
            from_=SETTLEMENT.statuses,
            to=Settlement.Status.SETTLED,
            submitted_by_us=False,
            tx_hash=elsewhere[0],
            block_number=elsewhere[1],
            finished_at=timezone.now(),
        )
        return
    SETTLEMENT.move(
        Settlement.objects.filter(pk=row.pk),
        to=Settlement.Status.FAILED,
        tx_hash=tx.tx_hash or "",
        error_reason=protocol.TRANSACTION_STATE,
        error=f"transferWithAuthorization failed: {tx.error}"[:500],
        finished_at=timezone.now(),
    )
