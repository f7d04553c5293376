"""Sweeps of deposit addresses into the vault, and what a sweep moved (its `Swept` events): how much, of which
token, and whether it covers what its owner counted."""

from __future__ import annotations

import logging
from typing import Any

from eth_utils import keccak
from web3.exceptions import Web3RPCError

from chains.artifacts import encode_call
from chains.evm import deposit_salt
from chains.incidents import incident_record
from chains.keys import Signer
from chains.models import Incident, OutboxTx
from chains.outbox.receipts import chain_client, receipt_logs, receipt_of
from chains.outbox.send import outbox_submit
from chains.registry import chain_get
from chains.signers import signer_address

logger = logging.getLogger(__name__)


SWEPT_TOPIC = "0x" + keccak(b"Swept(bytes32,address,address,uint256)").hex()


def outbox_sweep(*, key: str, chain_id: int, kind: str, identifier: str, token: str) -> OutboxTx:
    """The chain's deposit factory moves what the deposit address of (kind, identifier) holds of `token` (the
    zero address: native coin) into the vault. Asked for once per key, like every outbox transaction."""
    chain = chain_get(chain_id)
    if chain is None or not chain.factory_address:
        raise ValueError(f"chain {chain_id} has no deposit factory")
    data = encode_call(
        "DepositFactory",
        "sweep",
        deposit_salt(kind=kind, identifier=identifier),
        token,
        signer_address(Signer.VAULT),
    )
    return outbox_submit(key=key, chain_id=chain_id, signer=Signer.VAULT, to=chain.factory_address, data=data)


def _swept_in(tx: OutboxTx, logs: list[dict[str, Any]]) -> int:
    return sum(
        int(log["data"], 16)
        for log in logs
        if log["address"].lower() == tx.to.lower() and log["topics"] and log["topics"][0] == SWEPT_TOPIC
    )


def swept_amount(tx: OutboxTx) -> int | None:
    """What a mined sweep moved, from the factory's `Swept` events in its receipt; None when the receipt's
    logs were not kept (a sweep finished before they were)."""
    if tx.status != OutboxTx.Status.MINED or not tx.block_hash:
        return None
    return _swept_in(tx, tx.logs)


def swept_in_block(tx: OutboxTx) -> int | None:
    """What a sweep still in flight moved in the block that holds it now (one of its signed versions, mined
    and successful, not yet confirmed); None when none is in a block, or it reverted there. A reorg may take
    that block away: the sweep is then mined again at its nonce, before any later transaction of the vault's
    (the nonce order), and its outcome is checked again once confirmed."""
    if tx.status != OutboxTx.Status.BROADCAST:
        return None
    try:
        receipt = receipt_of(chain_client(tx)[1], tx)
    except (Web3RPCError, ValueError, OSError):
        return None
    if receipt is None or receipt["status"] != 1:
        return None
    return _swept_in(tx, receipt_logs(receipt))


def swept_of(tx: OutboxTx, token: str) -> int | None:
    """What a mined sweep moved of `token` (its `Swept` events name the token); None when its logs were not kept."""
    if tx.status != OutboxTx.Status.MINED or not tx.block_hash:
        return None
    wanted = "0x" + "00" * 12 + token.lower().removeprefix("0x")
    return sum(
        int(log["data"], 16)
        for log in tx.logs
        if log["address"].lower() == tx.to.lower()
        and len(log["topics"]) > 2
        and log["topics"][0] == SWEPT_TOPIC
        and log["topics"][2].lower() == wanted
    )


def sweep_covers(tx: OutboxTx, *, counted: int, subject: str, what: str) -> bool:
    """Whether a mined sweep moved at least what its owner counted (`subject`, e.g. "order:<id>"); if not, staff
    are told (an incident that holds the owner): nothing may be delivered or paid out for money the vault did
    not get. `what` names the owner in the incident, e.g. "order <id> (executed)"."""
    swept = swept_amount(tx)
    if swept is None or swept >= counted:
        return True
    incident_record(
        kind=Incident.Kind.SWEEP_SHORT,
        subject=subject,
        chain_id=tx.chain_id,
        summary=f"{what}: its sweep {tx.tx_hash} moved {swept} of the {counted} it counted; nothing more is sent "
        "for it until staff resolve this",
        details={"sweep": tx.key, "tx_hash": tx.tx_hash, "swept": str(swept), "counted": str(counted)},
    )
    return False
