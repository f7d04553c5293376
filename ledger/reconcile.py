"""Does the ledger agree with the chains? Per chain, at one block, for every address the service holds value
at (the vault, the solver, each deposit address not yet swept) and every token the ledger knows there:

    expected  = the ledger's balance from postings of blocks at or below the block
    in flight = what the chain did at or below the block that is not posted yet: outbox transactions mined but
                not yet confirmed deep enough to record, deposits recorded but not yet handed over
    actual    = the balance the chain reports at that block

`actual - expected - in flight` must be 0. Every other address the service ever watched is read too, in every
token of the registry: one that holds anything the ledger does not is a difference (money that reached a
deposit address no scan recorded). The block is the watcher's confirmed cursor (every deposit below it
is recorded) unless asked for an earlier one, and it is pinned: its hash is read before and after the
balances, and a reorg in between makes the run fail rather than compare two states.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from django.db import connection, transaction
from django.db.models import Q, Sum
from django.utils import timezone
from eth_utils import to_checksum_address

from chains.artifacts import ERC20, artifact
from chains.client import web3_for
from chains.evm import ZERO_ADDRESS
from chains.keys import Signer
from chains.models import ChainCursor, Deposit, OutboxTx, Token, WatchedAddress
from chains.outbox.receipts import receipt_logs, receipt_of, rpc_batch
from chains.registry import chain_get
from chains.signers import signer_address
from chains.states import IN_FLIGHT
from ledger.liabilities import owed_on
from ledger.models import Account, Entry, Posting, ReconcileRun, ReconcileStart
from ledger.observed import HELD, outbox_legs, sent_by_the_service
from ledger.postings import Leg, credit, debit, post

logger = logging.getLogger(__name__)
Kind = Account.Kind
RECENT_POSTINGS = 5


class CannotReconcile(Exception):
    """The run could not compare (no cursor yet, a block beyond it, a node that does not answer, a reorg)."""


@dataclass
class Row:
    address: str
    kind: str  # the address's main account kind: vault, solver or deposit_address
    token: str
    expected: int = 0
    in_flight: int = 0
    actual: int | None = None
    recent: list[dict] = field(default_factory=list)

    @property
    def difference(self) -> int:
        return 0 if self.actual is None else self.actual - self.expected - self.in_flight

    def as_dict(self) -> dict:
        return {
            **{k: (str(v) if isinstance(v, int) else v) for k, v in asdict(self).items()},
            "difference": str(self.difference),
        }


def counted_after(chain_id: int) -> int:
    """The posting after which a (restarted) devnet's postings count; 0 for every real chain."""
    start = ReconcileStart.objects.filter(chain_id=chain_id).order_by("-after_posting_id").first()
    return start.after_posting_id if start is not None else 0


def _balances_at(chain_id: int, block: int) -> dict[int, int]:
    """{account id: debits - credits} of the chain's held accounts, counting postings up to `block` (and those
    off chain, which move nothing between addresses)."""
    entries = Entry.objects.filter(
        account__chain_id=chain_id, account__kind__in=HELD, posting_id__gt=counted_after(chain_id)
    ).filter(Q(posting__block_number__lte=block) | Q(posting__block_number__isnull=True))
    totals: dict[int, int] = defaultdict(int)
    if connection.vendor == "postgresql":  # exact numeric sums in the database
        for row in entries.values("account_id", "side").annotate(total=Sum("amount")).order_by():
            totals[row["account_id"]] += (1 if row["side"] == Entry.Side.DEBIT else -1) * int(row["total"])
    else:  # SQLite's SUM of this column is a float: summed here, exactly
        for account_id, side, amount in entries.values_list("account_id", "side", "amount").iterator():
            totals[account_id] += amount if side == Entry.Side.DEBIT else -amount
    return totals


def _main_kind(kinds: set[str]) -> str:
    for kind in (Kind.VAULT, Kind.SOLVER, Kind.DEPOSIT_ADDRESS):
        if kind in kinds:
            return kind
    return sorted(kinds)[0]


def _expected(chain_id: int, block: int) -> dict[tuple[str, str], Row]:
    accounts = {a.pk: a for a in Account.objects.filter(chain_id=chain_id, kind__in=HELD)}
    totals = _balances_at(chain_id, block)
    kinds: dict[tuple[str, str], set[str]] = defaultdict(set)
    rows: dict[tuple[str, str], Row] = {}
    for pk, account in accounts.items():
        where = (account.ref, account.token)
        kinds[where].add(account.kind)
        row = rows.setdefault(where, Row(address=account.ref, kind=account.kind, token=account.token))
        row.expected += totals.get(pk, 0)
    for where, row in rows.items():
        row.kind = _main_kind(kinds[where])
    # The vault and the solver in every token of the chain, with postings or not: what they hold unposted
    # (an opening balance, a transfer behind the service's back) shows.
    tokens = {
        ZERO_ADDRESS,
        *(t.lower() for t in Token.objects.filter(chain_id=chain_id).values_list("address", flat=True)),
    }
    for kind, address in (
        (Kind.VAULT, signer_address(Signer.VAULT)),
        (Kind.SOLVER, signer_address(Signer.SOLVER)),
    ):
        for token in tokens if address else ():
            rows.setdefault((address.lower(), token), Row(address=address.lower(), kind=kind, token=token))
    return rows


def _add_legs(rows: dict[tuple[str, str], Row], legs: list[Leg]) -> None:
    for leg in legs:
        if leg.kind not in HELD:
            continue
        row = rows.setdefault((leg.ref, leg.token), Row(address=leg.ref, kind=leg.kind, token=leg.token))
        row.in_flight += leg.amount if leg.side == "debit" else -leg.amount


def _in_flight(chain_id: int, block: int, w3, rows: dict[tuple[str, str], Row]) -> None:
    """What the chain did at or below `block` that the ledger does not hold yet."""
    for tx in OutboxTx.objects.filter(chain_id=chain_id, status__in=IN_FLIGHT).exclude(hashes=[]):
        receipt = receipt_of(w3, tx)
        if receipt is None or receipt["blockNumber"] > block:
            continue
        legs = outbox_legs(
            tx,
            succeeded=receipt["status"] == 1,
            logs=receipt_logs(receipt),
            gas_used=receipt["gasUsed"],
            gas_price=receipt.get("effectiveGasPrice"),
        )
        _add_legs(rows, legs)
    unhandled = Deposit.objects.filter(
        chain_id=chain_id, status=Deposit.Status.CONFIRMED, handled_at__isnull=True, block_number__lte=block
    )
    for deposit in unhandled:
        if sent_by_the_service(deposit):  # its outbox transaction's legs hold it
            continue
        _add_legs(
            rows,
            [debit(chain_id, deposit.token, Kind.DEPOSIT_ADDRESS, deposit.to_address, int(deposit.amount))],
        )


BALANCES_PER_BATCH = 200
BALANCE_OF = "0x70a08231"


def _unposted_addresses(chain_id: int, w3, block: int, rows: dict[tuple[str, str], Row]) -> list[Row]:
    """Every address the service ever watched on the chain, in every token of the registry and the native
    coin, where the ledger holds nothing and nothing is in flight: a row for each that holds something at
    `block` (money that reached a deposit address before or after any owner watched it, or that no scan
    recorded), read in JSON-RPC batches of BALANCES_PER_BATCH."""
    tokens = [
        ZERO_ADDRESS,
        *(t.lower() for t in Token.objects.filter(chain_id=chain_id).values_list("address", flat=True)),
    ]
    addresses = WatchedAddress.objects.filter(chain_id=chain_id).values_list("address", flat=True)
    candidates = [
        Row(address=address.lower(), kind=Kind.DEPOSIT_ADDRESS, token=token)
        for address in addresses.iterator()
        for token in tokens
        if (address.lower(), token) not in rows
    ]
    found = []
    for start in range(0, len(candidates), BALANCES_PER_BATCH):
        batch = candidates[start : start + BALANCES_PER_BATCH]
        calls: list[tuple[str, list]] = [
            ("eth_getBalance", [to_checksum_address(row.address), hex(block)])
            if row.token == ZERO_ADDRESS
            else (
                "eth_call",
                [
                    {"to": to_checksum_address(row.token), "data": BALANCE_OF + "0" * 24 + row.address[2:]},
                    hex(block),
                ],
            )
            for row in batch
        ]
        for row, answer in zip(batch, rpc_batch(w3, calls), strict=True):
            if "error" in answer:
                raise CannotReconcile(f"the balance of {row.address} in {row.token}: {answer['error']}")
            result = answer.get("result") or "0x0"
            row.actual = int(result, 16) if result != "0x" else 0
            if row.actual:
                found.append(row)
    return found


def _actual(w3, row: Row, block: int) -> int:
    address = to_checksum_address(row.address)
    if row.token == ZERO_ADDRESS:
        return int(w3.eth.get_balance(address, block_identifier=block))
    token = w3.eth.contract(address=to_checksum_address(row.token), abi=artifact(ERC20)["abi"])
    return int(token.functions.balanceOf(address).call(block_identifier=block))


def _recent(row: Row, chain_id: int) -> list[dict]:
    entries = (
        Entry.objects.filter(
            account__chain_id=chain_id,
            account__ref=row.address,
            account__token=row.token,
            account__kind__in=HELD,
            posting_id__gt=counted_after(chain_id),
        )
        .select_related("posting")
        .order_by("-posting_id")[:RECENT_POSTINGS]
    )
    return [
        {
            "key": e.posting.key,
            "kind": e.posting.kind,
            "side": e.side,
            "amount": str(e.amount),
            "block": e.posting.block_number,
            "at": e.posting.created_at.isoformat(),
        }
        for e in entries
    ]


def _block_hash(w3, number: int) -> str:
    block = w3.eth.get_block(number)
    value = block["hash"]
    return value.to_0x_hex() if hasattr(value, "to_0x_hex") else str(value)


def _liabilities(chain_id: int, w3, block: int, rows: list[Row]) -> list[Row]:
    """A row per token the vault owes merchants (ledger.liabilities: a refund balance): expected what is owed,
    actual as much of it as the vault holds, so a vault short of what it owes is a difference."""
    vault = (signer_address(Signer.VAULT) or "").lower()
    held = {row.token: row.actual for row in rows if row.kind == Kind.VAULT}
    found = []
    for name, token, amount in owed_on(chain_id):
        actual = held.get(token)
        if actual is None:
            actual = _actual(w3, Row(address=vault, kind=Kind.VAULT, token=token), block)
        found.append(Row(address=vault, kind=name, token=token, expected=amount, actual=min(actual, amount)))
    return found


def compare(chain_id: int, at_block: int | None = None) -> tuple[int, str, list[Row]]:
    """(block, its hash, rows) of one comparison; raises CannotReconcile."""
    chain = chain_get(chain_id)
    if chain is None:
        raise CannotReconcile(f"chain {chain_id} is not in the registry")
    cursor = ChainCursor.objects.filter(pk=chain_id).first()
    if cursor is None or cursor.scanned_to is None or cursor.scanned_to < 0:
        raise CannotReconcile(f"the watcher has not scanned chain {chain_id} yet")
    if at_block is not None and at_block > cursor.scanned_to:
        raise CannotReconcile(
            f"block {at_block} is beyond what the watcher confirmed on chain {chain_id} ({cursor.scanned_to})"
        )
    block = cursor.scanned_to if at_block is None else at_block
    try:
        w3 = web3_for(chain)
        pinned = _block_hash(w3, block)
        rows = _expected(chain_id, block)
        _in_flight(chain_id, block, w3, rows)
        checked = [
            row
            for row in rows.values()
            if row.kind in (Kind.VAULT, Kind.SOLVER) or row.expected or row.in_flight
        ]
        for row in checked:
            row.actual = _actual(w3, row, block)
        checked += _unposted_addresses(chain_id, w3, block, rows)
        checked += _liabilities(chain_id, w3, block, checked)
        if _block_hash(w3, block) != pinned:
            raise CannotReconcile(f"block {block} changed while it was read (a reorg): run again")
    except CannotReconcile:
        raise
    except Exception as exc:  # a node that does not answer, a token that is not one
        raise CannotReconcile(f"{type(exc).__name__}: {exc}"[:400]) from exc
    for row in checked:
        if row.difference:
            row.recent = _recent(row, chain_id)
    checked.sort(key=lambda r: (r.kind != Kind.VAULT, r.kind != Kind.SOLVER, r.address, r.token))
    return block, pinned, checked


def reconcile_chain(chain_id: int, at_block: int | None = None, *, opening: bool = False) -> ReconcileRun:
    """Compare, record the run, log a difference at ERROR (none when `opening`: those are balances about to
    be adopted as a new devnet's opening ones); a clean run closes the chain's open differences."""
    try:
        block, block_hash, rows = compare(chain_id, at_block)
    except CannotReconcile as exc:
        run = ReconcileRun.objects.create(chain_id=chain_id, error=str(exc)[:500])
        logger.error("Reconciliation of chain %s could not run: %s", chain_id, exc)
        return run
    different = [row for row in rows if row.difference]
    with transaction.atomic():
        run = ReconcileRun.objects.create(
            chain_id=chain_id,
            block_number=block,
            block_hash=block_hash,
            rows=[row.as_dict() for row in rows],
            differences=len(different),
        )
        if not different:
            ReconcileRun.objects.filter(
                chain_id=chain_id, resolved_at__isnull=True, created_at__lte=run.created_at
            ).exclude(pk=run.pk).update(resolved_at=timezone.now(), resolved_by=f"clean run {run.pk}")
            ReconcileRun.objects.filter(pk=run.pk).update(resolved_at=run.created_at, resolved_by="clean")
    for row in different:
        where = (chain_id, block, row.kind, row.address, row.actual, row.token)
        if opening:  # not a difference: what a fresh devnet's vault and solver start with
            logger.debug("Opening balance of chain %s at block %s: %s %s holds %s of %s", *where)
            continue
        logger.error(
            "Reconciliation of chain %s at block %s: %s %s holds %s of %s, the ledger expects %s (+%s in flight): "
            "difference %s",
            *where,
            row.expected,
            row.in_flight,
            row.difference,
        )
    run.refresh_from_db()
    return run


def adopt(run: ReconcileRun, *, reason: str, by: str) -> list[str]:
    """Record each difference of `run` as an adjustment from the operator's own funds (an opening balance, a
    top-up, a withdrawal staff made on purpose), at the run's block: the keys posted. Only after a person has
    found why the chain differs; a difference nobody can explain is a loss, and adopting it hides it."""
    keys = []
    for row in run.rows:
        difference = int(row["difference"])
        if not difference:
            continue
        # The block's hash too: a restarted devnet numbers its blocks alike, and its opening balances are
        # adopted at the same height as its previous life's.
        key = f"adjustment:{run.chain_id}:{run.block_number}:{run.block_hash}:{row['address']}:{row['token']}"
        holder = (row["kind"], row["address"])
        operator = (Kind.OPERATOR, by)
        into, out_of = (holder, operator) if difference > 0 else (operator, holder)
        post(
            key=key,
            kind="adjustment",
            legs=[
                debit(run.chain_id, row["token"], into[0], into[1], abs(difference)),
                credit(run.chain_id, row["token"], out_of[0], out_of[1], abs(difference)),
            ],
            chain_id=run.chain_id,
            block_number=run.block_number,
            memo=f"{reason} (by {by})",
        )
        keys.append(key)
    if keys:
        ReconcileRun.objects.filter(pk=run.pk).update(resolved_at=timezone.now(), resolved_by=by)
    return keys


def restart_devnet(chain_id: int, *, reason: str) -> ReconcileStart | None:
    """A devnet started again from block 0: reconciliation counts only what is posted from now on (its opening
    balances, adopted next). None when the ledger holds nothing of it yet."""
    last = Posting.objects.order_by("-pk").values_list("pk", flat=True).first()
    counted = Entry.objects.filter(account__chain_id=chain_id, posting_id__gt=counted_after(chain_id))
    if last is None or not counted.exists():
        return None
    return ReconcileStart.objects.create(chain_id=chain_id, after_posting_id=last, reason=reason)
