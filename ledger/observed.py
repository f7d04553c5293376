"""What the chains saw, in the ledger: every deposit to a watched address and every transaction the outbox
sent, posted from the chain's own record of it (the deposit's transfer, the receipt's logs, its gas).

Registered as observers of `chains.handlers` (ledger/apps.py), so they run in the transaction that records
the change, for every owner: a deposit nobody handles, a quick payment's refund and an order's sweep alike.

- A deposit: the payer's account to the deposit address's, `deposit:<id>`; withdrawn after a reorg, the
  same amounts back, `deposit:<id>:withdrawn`.
- A mined or failed outbox transaction, `outbox:<key>:<block hash>`: every ERC-20 `Transfer` in its receipt
  that touches an address the service holds (the vault, the solver, a deposit address), its native value,
  a deposit factory's native sweep (its `Swept` event), and the gas its sender paid. Keyed by the block
  that carries it: when a reorg takes it out of that block, `...:reorged` undoes it, and the block that
  carries it next posts it again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from eth_utils import keccak, to_checksum_address

from chains.artifacts import forwarder_init_code_hash
from chains.evm import ZERO_ADDRESS, create2_address
from chains.handlers import deposit_observer, outbox_observer
from chains.keys import OwnerKind, Signer, Step, owner_id, owner_kind
from chains.models import Deposit, OutboxTx, WatchedAddress
from chains.outbox.sweeps import SWEPT_TOPIC
from chains.signers import signer_address
from ledger.models import Account, Posting
from ledger.postings import Leg, credit, debit, post, reverse

TRANSFER_TOPIC = "0x" + keccak(b"Transfer(address,address,uint256)").hex()
Kind = Account.Kind
HELD = (Kind.DEPOSIT_ADDRESS, Kind.VAULT, Kind.SOLVER, Kind.FEES)  # what sits at the service's addresses


@dataclass(frozen=True)
class Movement:
    """`amount` of `token` from one address to another, as a receipt or a deposit shows it."""

    token: str
    source: str
    target: str
    amount: int


def _topic_address(topic: str) -> str:
    return to_checksum_address("0x" + topic[-40:])


def receipt_movements(
    *, to: str, sender: str, value: int, succeeded: bool, logs: list[dict], gas_used: int | None, gas_price
) -> tuple[list[Movement], int]:
    """(what moved, gas paid in wei) by one transaction, from its receipt: ERC-20 transfers, its native value,
    native coin a deposit factory swept (ERC-20 sweeps show as transfers)."""
    moved: list[Movement] = []
    if succeeded and value:
        moved.append(Movement(ZERO_ADDRESS, sender, to, int(value)))
    for log in logs if succeeded else []:
        topics = log.get("topics") or []
        if len(topics) == 3 and topics[0] == TRANSFER_TOPIC and log.get("data", "0x") not in ("0x", ""):
            amount = int(log["data"], 16)
            if amount:
                token = to_checksum_address(log["address"])
                moved.append(Movement(token, _topic_address(topics[1]), _topic_address(topics[2]), amount))
        elif len(topics) == 4 and topics[0] == SWEPT_TOPIC and _topic_address(topics[2]) == ZERO_ADDRESS:
            amount = int(log["data"], 16)
            if amount:
                forwarder = create2_address(
                    factory=to_checksum_address(log["address"]),
                    salt=bytes.fromhex(topics[1][2:]),
                    init_code_hash=forwarder_init_code_hash(),
                )
                moved.append(Movement(ZERO_ADDRESS, forwarder, _topic_address(topics[3]), amount))
    gas = int(gas_used or 0) * int(gas_price or 0)
    return moved, gas


class Accounts:
    """Which account an address is on one chain: the vault, the solver, a deposit address, or, for anyone
    else, the counterparty the transaction's purpose names (a payer for refunds, a recipient otherwise)."""

    def __init__(self, chain_id: int, addresses: Iterable[str], *, watched=WatchedAddress):
        self.chain_id = chain_id
        self.roles = {
            a.lower(): kind
            for a, kind in (
                (signer_address(Signer.VAULT), Kind.VAULT),
                (signer_address(Signer.SOLVER), Kind.SOLVER),
            )
            if a
        }
        wanted = {a for a in addresses if a.lower() not in self.roles}
        self.deposit_addresses = {
            a.lower()
            for a in watched.objects.filter(
                chain_id=chain_id, address__in=[to_checksum_address(a) for a in wanted]
            ).values_list("address", flat=True)
        }

    def held(self, address: str) -> bool:
        return address.lower() in self.roles or address.lower() in self.deposit_addresses

    def kind(self, address: str, *, outsider: str) -> str:
        if address.lower() in self.roles:
            return self.roles[address.lower()]
        if address.lower() in self.deposit_addresses:
            return Kind.DEPOSIT_ADDRESS
        return outsider


# What an outbox transaction's posting is called, by its step (chains.keys.Step): the step's own name but for
# these. A step the key does not name is booked under its owner's kind.
POSTING_KINDS: dict[str, str] = {Step.RELAY: "delivery", Step.EXECUTE: "execution", Step.RETURN: "refund"}


def posting_kind(step: str, owner: str) -> str:
    """The kind of an outbox transaction's posting: sweep, delivery, execution, refund, payout, deploy,
    allowance, nonce..."""
    return POSTING_KINDS.get(step, step) if step else owner_kind(owner)


def outbox_legs(
    tx: OutboxTx,
    *,
    succeeded: bool,
    logs: list[dict],
    gas_used: int | None,
    gas_price,
    watched=WatchedAddress,
    funds: str | None = None,
) -> list[Leg]:
    """The legs of what `tx` moved and burned, per its receipt (shared by the observer, `reconcile`, which
    counts a transaction mined but not yet recorded, and the backfill, with its historical `watched` model and
    the `funds` its key names, which its historical row has no column for). An address the service does not
    hold is the account of whose funds the transaction moves (`chains.keys.Funds`: a payer, a recipient, the
    operator)."""
    moved, gas = receipt_movements(
        to=tx.to,
        sender=tx.sender,
        value=int(tx.value),
        succeeded=succeeded,
        logs=logs,
        gas_used=gas_used,
        gas_price=gas_price,
    )
    accounts = Accounts(
        tx.chain_id, {a for m in moved for a in (m.source, m.target)} | {tx.sender}, watched=watched
    )
    outsider = Kind(funds or tx.funds)
    legs: list[Leg] = []
    for m in moved:
        if not (accounts.held(m.source) or accounts.held(m.target)):
            continue  # between contracts the call reached: not the service's money
        if accounts.kind(m.target, outsider="") == Kind.DEPOSIT_ADDRESS and not accounts.held(m.source):
            # An outsider's money into a deposit address (an x402 settlement moving the payer's tokens to
            # an order's address): the watcher records it as a deposit, and the deposit is its posting.
            continue
        legs += [
            credit(tx.chain_id, m.token, accounts.kind(m.source, outsider=outsider), m.source, m.amount),
            debit(tx.chain_id, m.token, accounts.kind(m.target, outsider=outsider), m.target, m.amount),
        ]
    if gas:
        sender_kind = accounts.kind(tx.sender, outsider=Kind.OPERATOR)
        legs += [
            credit(tx.chain_id, ZERO_ADDRESS, sender_kind, tx.sender, gas),
            debit(tx.chain_id, ZERO_ADDRESS, Kind.GAS, tx.sender, gas),
        ]
    return legs


def order_of(owner: str):
    import uuid

    if owner_kind(owner) != OwnerKind.ORDER:
        return None
    identifier = owner_id(owner)
    try:
        return uuid.UUID(identifier)
    except ValueError:
        return None


_OWN_POSTING = re.compile(r"0x[0-9a-fA-F]{64}(:reorged)?")


@outbox_observer
def outbox_posted(tx: OutboxTx) -> None:
    """Make the ledger say what the row says now: the postings of blocks that no longer carry `tx` undone, and
    the block that carries it posted (once)."""
    prefix = f"outbox:{tx.key}:"
    current = f"{prefix}{tx.block_hash}" if tx.block_hash else None
    posted = Posting.objects.filter(key__startswith=prefix).values_list("key", flat=True)
    # This transaction's postings only: `order:<id>:sweep:<deposit>` is another transaction's key that
    # starts with `order:<id>:sweep`, and its postings are not this one's to undo.
    keys = {key for key in posted if _OWN_POSTING.fullmatch(key[len(prefix) :])}
    for key in keys:
        if key != current and not key.endswith(":reorged") and f"{key}:reorged" not in keys:
            reverse(key, key=f"{key}:reorged", kind="reorg")
    if current is None or current in keys or tx.status not in (OutboxTx.Status.MINED, OutboxTx.Status.FAILED):
        return
    legs = outbox_legs(
        tx,
        succeeded=tx.status == OutboxTx.Status.MINED,
        logs=tx.logs,
        gas_used=tx.gas_used,
        gas_price=tx.effective_gas_price,
    )
    if legs:
        post(
            key=current,
            kind=posting_kind(tx.step, tx.owner),
            legs=legs,
            order_id=order_of(tx.owner),
            owner=tx.owner,
            tx_hash=tx.tx_hash,
            chain_id=tx.chain_id,
            block_number=tx.block_number,
        )


def sent_by_the_service(deposit: Deposit) -> bool:
    """Whether the service's own vault or solver sent the deposit (the vault paying the order that delivers a
    merchant's refund elsewhere): its outbox transaction's posting moved it already, from the signer's account
    to the deposit address's, so the deposit is not posted again."""
    sender = deposit.from_address.lower()
    return bool(sender) and sender in {
        (signer_address(role) or "").lower() for role in (Signer.VAULT, Signer.SOLVER)
    }


@deposit_observer
def deposit_posted(deposit: Deposit) -> None:
    """A deposit in the ledger: posted when handed over confirmed, undone when withdrawn (one the service sent
    itself is its outbox transaction's posting)."""
    if sent_by_the_service(deposit):
        return
    key = f"deposit:{deposit.pk}"
    if deposit.status == Deposit.Status.WITHDRAWN:
        if Posting.objects.filter(key=key).exists():
            reverse(key, key=f"{key}:withdrawn", kind="reorg")
        return
    amount = int(deposit.amount)
    if not amount:
        return
    legs = [
        credit(deposit.chain_id, deposit.token, Kind.PAYER, deposit.from_address, amount),
        debit(deposit.chain_id, deposit.token, Kind.DEPOSIT_ADDRESS, deposit.to_address, amount),
    ]
    post(
        key=key,
        kind="deposit",
        legs=legs,
        order_id=order_of(deposit.owner),
        owner=deposit.owner,
        tx_hash=deposit.tx_hash,
        chain_id=deposit.chain_id,
        block_number=deposit.block_number,
    )
