"""The deposit watcher: confirmed transfers to watched addresses, read from a chain once each.

One scan of one chain (a beat task per chain; a lease on the chain's cursor
keeps it to one at a time across processes):

1. the head, and the confirmed end: the last block `confirmations` deep, that
   block counted (`Chain.confirmed_through`: head - confirmations + 1); nothing later is
   read, so a transfer in a block that is reorganised away before it is
   confirmed is never seen;
2. a reorg deeper than that: the cursor keeps the hash of the last block it
   read; when the block there has another hash (or the chain got shorter),
   the deposits of the last REORG_WINDOW_BLOCKS blocks whose block is gone are
   marked `orphaned` and the cursor goes back that far to read them again;
3. from the block after the cursor, at most WATCHER_MAX_BLOCKS blocks:
   ERC-20 `Transfer` logs to the watched addresses (one `eth_getLogs`: filtered
   by recipient up to WATCHER_ADDRESSES_PER_QUERY addresses, every Transfer of
   the range matched in memory above that), and native-coin transfers to them
   (the range's blocks with their transactions, in one JSON-RPC batch; then
   the receipts of the matching ones, in another); every log must come from
   the blocks read, or the scan stops (a reorg while it ran) and is retried.
   The requests of a scan do not grow with the number of addresses watched,
   except native balances on a chain without traces (below);
4. each transfer is one `Deposit`, named by its transaction and its place
   among that transaction's transfers of the same token to the same address,
   so a transaction that a reorg moved to another block is the same deposit
   (its block is updated; an orphaned one is confirmed again). The deposits
   and the cursor are one database transaction; once it commits, each new
   deposit is handed to its owner's handler (`chains.handlers`) in a
   transaction of its own that marks it handled, so the first deposit of a
   burst is settling while the scan hands over the rest; a burst larger than
   WATCHER_HAND_OVER_HERE is also queued to the settlement workers, one task
   per deposit, which share it with the scan (`hand_over`). A token not in the
   registry is held for staff (an incident), never handed over, swept or
   refunded, so a contract that emits fake Transfer events costs the vault
   nothing. A handler that fails, or a scan killed before it handed a deposit
   over, leaves the deposit unhandled, with its error, for
   `retry_unhandled_deposits`;
5. a deposit still orphaned REORG_GRACE_BLOCKS after it was found gone is
   `withdrawn`, and handed to its owner again so that it stops counting it;
6. the cursor moves to the end of the range, with that block's hash;
7. on a chain whose row sets `front_confirmations` below `confirmations` (a payment may be delivered from
   inventory on first sight, within exposure limits), once the scan is caught up: the ERC-20 transfers of
   listed tokens to the watched addresses in the blocks above the confirmed end, up to the sighted end
   (`Chain.sighted_through`), each block read once (`ChainCursor.sighted_to`), in one `eth_getLogs`; they
   are not deposits (the same transfers are, once confirmed) but `Sighting`s, handed to their owners'
   sighting handlers together, before anything else the scan does after its commit (`sight`);
8. blocks were confirmed, so may the service's own transactions in them be: their receipts are read
   (`outbox_check_receipts` on this chain) before the scan hands its deposits over, which in a burst
   is seconds of work (a burst's hand-overs are queued to the settlement workers first, so they start
   on it meanwhile).

Zero-amount transfers move nothing and are not recorded.

Native coin sent by a contract (a Safe, an ERC-4337 account: an internal CALL)
is in no transaction's `value` to the address. Where the chain's RPC offers
`trace_block` (the chain's `traces`), the range's traces are read in one batch
and matched against the watched set: each internal transfer with its
transaction and sender. Otherwise it is found by balance
(`chains.native.native_internal`): each watched address's balance at the end of
the range, read in JSON-RPC batches of WATCHER_BALANCES_PER_BATCH (the one cost
that grows with the addresses watched), against its balance at the block before
(kept on the row from the last scan), plus what the factory swept out of it
meanwhile (its `Swept` events), less the top-level transfers found. What is
left arrived by internal calls: one deposit without a sender, named by the block
it was seen at, counted like any other, and refunded (if it must be) to the
order's `refundAddress` or to an address staff enter. A balance that falls by
more than the sweeps explain is never counted: staff are told.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from web3 import Web3

from chains.client import block_hashes, nodes_status, scan_node, web3_node
from chains.evm import ZERO_ADDRESS
from chains.handlers import Sighting, deposit_changed, following_up_here, sighted
from chains.incidents import incident_record
from chains.models import ChainCursor, Deposit, Incident, Token, WatchedAddress
from chains.native import gas_seen, native_internal, read_balances, signer_addresses
from chains.outbox import outbox_check_receipts
from chains.registry import Chain, chain_get
from chains.states import DEPOSIT
from chains.transfers import (
    ReorgDuringScan,
    RequestCounter,
    Transfer,
    hex_str,
    native_transfers,
    numbered,
    read_blocks,
    token_transfers,
)
from core.tasks import Later

HAND_OVER_DEPOSIT = Later("chains.tasks.hand_over_deposit")

logger = logging.getLogger(__name__)


LEASE_SECONDS = 120


@dataclass(frozen=True)
class ScanResult:
    scanned_from: int
    scanned_to: int
    head: int
    deposits: int
    rpc_requests: int


def watch_address(*, chain_id: int, address: str, owner: str, watch_until) -> None:
    """Watch `address` on a chain until `watch_until`; what arrives there is handed over with `owner`."""
    WatchedAddress.objects.bulk_create(  # one statement: INSERT ... ON CONFLICT DO UPDATE
        [WatchedAddress(chain_id=chain_id, address=address, owner=owner, watch_until=watch_until)],
        update_conflicts=True,
        unique_fields=["chain_id", "address"],
        update_fields=["owner", "watch_until"],
    )


def look_back(*, chain_id: int, address: str, from_block: int) -> None:
    """Money reached a watched address in a block the cursor may have passed before it was watched (a payer
    that submitted its own authorization before the order that owns the address existed): the next scan reads
    the address's token transfers from `from_block` to where the cursor stood, so that they are deposits as
    any other. The earliest block asked for wins."""
    watched = WatchedAddress.objects.filter(chain_id=chain_id, address=address)
    watched.filter(look_back_from__isnull=True).update(look_back_from=from_block)
    watched.filter(look_back_from__gt=from_block).update(look_back_from=from_block)


def _looked_back(
    w3: Web3, chain: Chain, before: int, hashes: dict[int, str], counter: RequestCounter
) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """The token transfers to addresses asked to be looked back for (`look_back`) in blocks the cursor had
    passed (from their block to `before`), and the (row, block) pairs to clear once they are recorded. Each
    log's block must be the canonical one there (the node is asked for the hashes it does not know yet)."""
    asked: list[tuple[int, str, int]] = list(
        WatchedAddress.objects.filter(chain_id=chain.chain_id, look_back_from__isnull=False).values_list(
            "pk", "address", "look_back_from"
        )  # type: ignore[arg-type]  # not null, by the filter
    )
    if not asked:
        return [], []
    found: list[dict[str, Any]] = []
    earliest = min(block for _, _, block in asked)
    if earliest <= before:
        addresses = [address for _, address, block in asked if block <= before]
        found = [
            t
            for t in token_transfers(w3, earliest, before, addresses, counter)
            if any(t["to_address"] == address and t["block_number"] >= block for _, address, block in asked)
        ]
        numbers = sorted({t["block_number"] for t in found} - set(hashes))
        canonical = dict(hashes) | block_hashes(w3, numbers)
        if any(canonical.get(t["block_number"]) != t["block_hash"] for t in found):
            raise ReorgDuringScan(f"the chain moved while blocks {earliest}-{before} were read again")
    return found, [(pk, block) for pk, _, block in asked]


def _lease(chain_id: int) -> bool:
    ChainCursor.objects.get_or_create(chain_id=chain_id)
    now = timezone.now()
    return (
        ChainCursor.objects.filter(pk=chain_id)
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .update(leased_until=now + timedelta(seconds=LEASE_SECONDS))
        == 1
    )


def scan_chain(chain_id: int) -> ScanResult | None:
    """One scan of a chain; None when it has no RPC URL or another scan of it is running."""
    chain = chain_get(chain_id)
    if chain is None or not chain.rpc_urls or not _lease(chain_id):
        return None
    try:
        result, to_hand_over = _scan(chain)
    except Exception as exc:  # an RPC failure: recorded on the cursor, retried at the next poll
        logger.warning("Scan of %s failed: %s: %s", chain.name, exc.__class__.__name__, str(exc)[:200])
        ChainCursor.objects.filter(pk=chain_id).update(
            last_error=f"{exc.__class__.__name__}: {exc}"[:500],
            last_scan_at=timezone.now(),
            nodes=nodes_status(chain),
        )
        return None
    finally:
        ChainCursor.objects.filter(pk=chain_id).update(leased_until=None)
    hand_over(to_hand_over)
    return result


def hand_over(deposits: list[Deposit]) -> None:
    """Hand the scan's new deposits to their owners, each in its own transaction, after the scan's commit
    (step 4). Up to WATCHER_HAND_OVER_HERE of them, here. A larger burst was also queued, one task each, to
    the settlement queue's workers as soon as the scan committed (`_queue_hand_overs`), and this process goes
    through it too: whichever takes a deposit first hands it over and settles what it paid at once, the others
    pass it by. One after another here, a burst's last deposit waited seconds (0.2 s each on a busy machine);
    queued alone, one chain's burst waited behind another's."""
    if len(deposits) <= settings.WATCHER_HAND_OVER_HERE:
        for deposit in deposits:
            handle_deposit(deposit)
        return
    for deposit in deposits:
        hand_over_here(deposit)


def _queue_hand_overs(deposits: list[Deposit]) -> None:
    """Queue a burst's hand-overs to the settlement workers (more than WATCHER_HAND_OVER_HERE deposits), before
    the scan reads its receipts: the workers start on it while the scan does that."""
    if len(deposits) <= settings.WATCHER_HAND_OVER_HERE:
        return
    try:
        for deposit in deposits:
            HAND_OVER_DEPOSIT.delay(deposit.pk)
    except Exception as exc:  # no broker: the scan hands every one over (hand_over)
        logger.warning("Deposits not queued for hand-over (%s): handed over here", exc.__class__.__name__)


def hand_over_here(deposit: Deposit) -> None:
    """Hand a deposit of a burst over, unless another process is doing so, and do here what its owner asked to
    follow (the order it paid is settled in this process: chains.handlers.follow_up)."""
    with following_up_here() as follow_ups:
        handle_deposit(deposit, unless_taken=True)
    for work in follow_ups:
        work()


def _reorganised(w3: Web3, cursor: ChainCursor, head: int, counter: RequestCounter) -> bool:
    """Whether the block the cursor last read is no longer on the chain (or the chain is now shorter)."""
    if cursor.scanned_to < 0:
        return False
    if cursor.scanned_to > head:
        return True
    if not cursor.scanned_hash:
        return False  # read before hashes were kept: nothing to compare with
    counter.requests += 1
    return hex_str(w3.eth.get_block(cursor.scanned_to)["hash"]) != cursor.scanned_hash


def _rewind(chain: Chain, w3: Web3, cursor: ChainCursor, head: int, counter: RequestCounter) -> int:
    """Mark orphaned the deposits whose block a reorg took away; the block to read again after."""
    if chain.devnet and cursor.scanned_to > head:
        back_to = -1  # a devnet restarted from block 0: read it all again
    else:
        back_to = max(-1, min(cursor.scanned_to, head) - settings.REORG_WINDOW_BLOCKS)
    recent = list(
        Deposit.objects.filter(chain_id=chain.chain_id, block_number__gt=back_to)
        .exclude(status__in=(Deposit.Status.ORPHANED, Deposit.Status.WITHDRAWN))
        .exclude(
            block_hash=""
        )  # a restarted devnet's previous life (chains.devnet.forget_devnet_transactions)
        .values_list("pk", "block_number", "block_hash")
    )
    numbers = sorted({number for _, number, _ in recent if number <= head})
    counter.requests += bool(numbers)
    canonical = block_hashes(w3, numbers)
    gone = [pk for pk, number, block_hash in recent if canonical.get(number) != block_hash]
    DEPOSIT.move(
        Deposit.objects.filter(pk__in=gone),
        from_=(Deposit.Status.CONFIRMED, Deposit.Status.UNLISTED),
        to=Deposit.Status.ORPHANED,
        orphaned_at_block=head,
    )
    ChainCursor.objects.filter(pk=chain.chain_id).update(scanned_to=back_to, scanned_hash="")
    WatchedAddress.objects.filter(chain_id=chain.chain_id).update(
        native_balance=None
    )  # read again at back_to
    logger.warning(
        "Reorg on %s: block %s is no longer the one read; reading again from block %s, %s deposit(s) orphaned",
        chain.name,
        cursor.scanned_to,
        back_to + 1,
        len(gone),
    )
    return back_to


def _scan(chain: Chain) -> tuple[ScanResult, list[Deposit]]:
    counter = RequestCounter()
    url, head, asked = scan_node(chain)
    counter.requests += len(asked)
    w3 = web3_node(chain, url)  # the whole scan reads one node, which has every block up to `head`
    cursor = ChainCursor.objects.get(pk=chain.chain_id)
    scanned_to, scanned_hash = cursor.scanned_to, cursor.scanned_hash
    if _reorganised(w3, cursor, head, counter):
        scanned_to, scanned_hash = _rewind(chain, w3, cursor, head, counter), ""
    if scanned_to < 0 and not chain.devnet:
        scanned_to = max(-1, chain.confirmed_through(head) - settings.WATCHER_FIRST_LOOKBACK_BLOCKS)
    start = scanned_to + 1
    end = min(chain.confirmed_through(head), start + settings.WATCHER_MAX_BLOCKS - 1)
    transfers: list[Transfer] = []
    balances: dict[str, int] = {}
    earlier, looked_back = _looked_back(w3, chain, start - 1, {}, counter)
    if end >= start:
        watched = list(
            WatchedAddress.objects.filter(
                chain_id=chain.chain_id, watch_until__gte=timezone.now()
            ).values_list("address", flat=True)
        )
        if watched:
            found = token_transfers(w3, start, end, watched, counter)
            blocks = read_blocks(w3, start, end, counter)
            hashes = {block["number"]: hex_str(block["hash"]) for block in blocks}
            if any(hashes.get(t["block_number"]) != t["block_hash"] for t in found):
                raise ReorgDuringScan(f"the chain moved while blocks {start}-{end} were read")
            found += native_transfers(blocks, w3, {a.lower() for a in watched}, counter)
            before_hash = scanned_hash if scanned_to == start - 1 else ""
            internal, balances = native_internal(
                chain,
                w3,
                start,
                end,
                watched,
                [t for t in found if t["token"] == ZERO_ADDRESS],
                hashes,
                before_hash,
                counter,
                signer_addresses(),
            )
            found += internal
            transfers = numbered([t for t in found + earlier if t["amount"] > 0])
            scanned_hash = hashes[end]
        else:
            counter.requests += 1
            scanned_hash = hex_str(w3.eth.get_block(end)["hash"])
            signers = signer_addresses()
            if signers:  # the gas of the service's signers, read with every scan
                read = read_balances(w3, list(dict.fromkeys(signers.values())), scanned_hash, counter)
                gas_seen(chain, {role: read[address] for role, address in signers.items()})
    if earlier and not transfers:
        transfers = numbered([t for t in earlier if t["amount"] > 0])
    with transaction.atomic():  # what the scan found, the balances it read and the cursor: all or nothing
        recorded, to_hand_over = _record(chain, transfers)
        for pk, block in looked_back:  # unless a look further back was asked meanwhile
            WatchedAddress.objects.filter(pk=pk, look_back_from=block).update(look_back_from=None)
        if end >= start:
            _withdraw_orphans(chain, end)
        for address, balance in balances.items():
            WatchedAddress.objects.filter(chain_id=chain.chain_id, address=address).update(
                native_balance=balance
            )
        ChainCursor.objects.filter(pk=chain.chain_id).update(
            scanned_to=max(end, scanned_to),
            scanned_hash=scanned_hash,
            head=head,
            last_scan_at=timezone.now(),
            last_error="",
            nodes=nodes_status(chain),
        )
    _queue_hand_overs(to_hand_over)
    if chain.sights_early and end >= chain.confirmed_through(head):
        sight(chain, w3, max(end, scanned_to), head, counter)
    if end >= start:
        # A block became confirmed: so may the service's own transactions in it. Their receipts are read now,
        # before this process hands deposits over (in a burst, seconds of work), not at the next receipt poll.
        try:
            outbox_check_receipts(chain_id=chain.chain_id)
        except Exception:  # the scan's own work is committed; the receipt poll reads them again
            logger.exception("Receipts on %s after its scan could not be read", chain.name)
    return ScanResult(
        scanned_from=start, scanned_to=end, head=head, deposits=recorded, rpc_requests=counter.requests
    ), to_hand_over


def sight(chain: Chain, w3: Web3, confirmed: int, head: int, counter: RequestCounter) -> list[Sighting]:
    """Step 7: the listed tokens' transfers to watched addresses in the blocks after `confirmed` up to the
    sighted end, each block once, handed to their owners' sighting handlers (which are told of the confirmed
    end even when nothing was seen). A failure here loses nothing: what was not seen is a deposit once
    confirmed."""
    sightings: list[Sighting] = []
    try:
        cursor = ChainCursor.objects.get(pk=chain.chain_id)
        start, end = max(confirmed, cursor.sighted_to) + 1, chain.sighted_through(head)
        if end >= start:
            owners = dict(
                WatchedAddress.objects.filter(
                    chain_id=chain.chain_id, watch_until__gte=timezone.now()
                ).values_list("address", "owner")
            )
            found = token_transfers(w3, start, end, list(owners), counter) if owners else []
            listed = _listed_tokens(chain, {t["token"] for t in found})
            by_lower = {address.lower(): owner for address, owner in owners.items()}
            sightings = [
                Sighting(owner=by_lower[t["to_address"].lower()], **t)
                for t in found
                if t["amount"] > 0 and t["token"].lower() in listed
            ]
            ChainCursor.objects.filter(pk=chain.chain_id).update(sighted_to=end)
        sighted(chain.chain_id, sightings, confirmed)
    except Exception as exc:
        logger.warning("First sight on %s failed: %s: %s", chain.name, exc.__class__.__name__, str(exc)[:200])
    return sightings


def _listed_tokens(chain: Chain, tokens: set[str]) -> set[str]:
    """The lowercase addresses among `tokens` the registry lists on the chain (ERC-20 only)."""
    if not tokens:
        return set()
    listed = Token.objects.filter(chain_id=chain.chain_id, address__in=tokens - {ZERO_ADDRESS})
    return {address.lower() for address in listed.values_list("address", flat=True)}


def _listed(chain: Chain, transfers: list[Transfer]) -> set[str]:
    """The tokens among the transfers that the registry lists on the chain (native coin always is)."""
    tokens = {t.token for t in transfers} - {ZERO_ADDRESS}
    listed = set(
        Token.objects.filter(chain_id=chain.chain_id, address__in=tokens).values_list("address", flat=True)
    )
    return listed | {ZERO_ADDRESS}


def _record(chain: Chain, transfers: list[Transfer]) -> tuple[int, list[Deposit]]:
    """Record each transfer once; a transfer seen again in another block moves its deposit there. How many
    were new, and the deposits to hand to their owners once this commits."""
    if not transfers:
        return 0, []
    owners = dict(
        WatchedAddress.objects.filter(
            chain_id=chain.chain_id, address__in={t.to_address for t in transfers}
        ).values_list("address", "owner")
    )
    listed = _listed(chain, transfers)
    recorded = 0
    to_hand_over: list[Deposit] = []
    for transfer in transfers:
        status = Deposit.Status.CONFIRMED if transfer.token in listed else Deposit.Status.UNLISTED
        with transaction.atomic():
            deposit, created = Deposit.objects.get_or_create(
                chain_id=chain.chain_id,
                tx_hash=transfer.tx_hash,
                to_address=transfer.to_address,
                token=transfer.token,
                seq=transfer.seq,
                defaults={
                    "log_index": transfer.log_index,
                    "block_number": transfer.block_number,
                    "block_hash": transfer.block_hash,
                    "from_address": transfer.from_address,
                    "amount": str(transfer.amount),
                    "owner": owners.get(transfer.to_address, ""),
                    "status": status,
                    "handled_at": timezone.now() if status == Deposit.Status.UNLISTED else None,
                },
            )
            if not created and deposit.block_hash != transfer.block_hash:
                deposit = _moved(chain, deposit, transfer, status)
        if created:
            recorded += 1
            if status == Deposit.Status.UNLISTED:
                _hold_unlisted(chain, deposit)
                continue
        if deposit.handled_at is None:
            to_hand_over.append(deposit)
    return recorded, to_hand_over


def _moved(chain: Chain, deposit: Deposit, transfer: Transfer, status: str) -> Deposit:
    """The deposit's transaction is in another block now (a reorg): the same deposit, never a second one.

    An orphaned deposit is confirmed again; a withdrawn one (seen again after
    the grace) is handed to its owner again, and staff are told.
    """
    returned = deposit.status == Deposit.Status.WITHDRAWN
    fields: dict[str, Any] = {
        "block_number": transfer.block_number,
        "block_hash": transfer.block_hash,
        "log_index": transfer.log_index,
        "orphaned_at_block": None,
    }
    if returned:
        fields["handled_at"] = None
    DEPOSIT.move(Deposit.objects.filter(pk=deposit.pk), from_=(deposit.status,), to=status, **fields)
    logger.warning(
        "Deposit %s (%s) is in block %s now (was %s)",
        deposit.pk,
        deposit.tx_hash,
        transfer.block_number,
        deposit.block_number,
    )
    if returned and deposit.owner:
        incident_record(
            kind=Incident.Kind.DEPOSIT_RETURNED,
            subject=f"deposit:{deposit.pk}",
            chain_id=chain.chain_id,
            summary=f"{deposit.amount} of {deposit.token} to {deposit.to_address} ({deposit.owner}) came back in "
            f"block {transfer.block_number} after it was withdrawn; its owner is told again",
            details={"tx_hash": deposit.tx_hash, "owner": deposit.owner},
        )
    deposit.refresh_from_db()
    return deposit


def _hold_unlisted(chain: Chain, deposit: Deposit) -> None:
    """A token the registry does not list: recorded for staff, never handed over (no sweep, no refund)."""
    incident_record(
        kind=Incident.Kind.UNLISTED_TOKEN,
        subject=f"unlisted:{chain.chain_id}:{deposit.token}:{deposit.to_address}",
        chain_id=chain.chain_id,
        summary=f"transfers of {deposit.token}, a token not in the registry, to {deposit.to_address} "
        f"({deposit.owner or 'no owner'}): held, never swept or refunded",
        details={"first_deposit": deposit.pk, "tx_hash": deposit.tx_hash, "amount": deposit.amount},
    )


def _withdraw_orphans(chain: Chain, scanned_to: int) -> None:
    """Deposits not seen again REORG_GRACE_BLOCKS after their block was found gone are withdrawn: their
    owner is told again (handed over), so that what it counted stops counting."""
    due = Deposit.objects.filter(
        chain_id=chain.chain_id,
        status=Deposit.Status.ORPHANED,
        orphaned_at_block__lte=scanned_to - settings.REORG_GRACE_BLOCKS,
    ).exclude(block_hash="")  # a restarted devnet's previous life: its blocks' numbers mean nothing now
    for deposit in list(due):
        if not DEPOSIT.move(
            Deposit.objects.filter(pk=deposit.pk),
            from_=(Deposit.Status.ORPHANED,),
            to=Deposit.Status.WITHDRAWN,
            handled_at=None,
        ):
            continue
        logger.error(
            "Deposit %s (%s, %s of %s to %s) was not seen again after a reorg: withdrawn",
            deposit.pk,
            deposit.tx_hash,
            deposit.amount,
            deposit.token,
            deposit.to_address,
        )
        deposit.refresh_from_db()
        handle_deposit(deposit)


def handle_deposit(deposit: Deposit, *, unless_taken: bool = False) -> bool:
    """Hand a deposit (confirmed, or withdrawn) to its owner's handler (`chains.handlers`), once per change
    of its state; True when it was handled. An orphaned or unlisted deposit waits; with `unless_taken`, so does
    one another process is handing over (False: that process sees to it)."""
    try:
        with transaction.atomic():
            locked = Deposit.objects.select_for_update(skip_locked=unless_taken).filter(pk=deposit.pk).first()
            if locked is None:
                return False
            if locked.handled_at is not None:
                return True
            if locked.status not in (Deposit.Status.CONFIRMED, Deposit.Status.WITHDRAWN):
                return False
            deposit_changed(locked)
            Deposit.objects.filter(pk=deposit.pk).update(handled_at=timezone.now(), handler_error="")
        return True
    except Exception as exc:
        logger.exception("Deposit %s could not be handled", deposit.pk)
        Deposit.objects.filter(pk=deposit.pk).update(handler_error=f"{exc.__class__.__name__}: {exc}"[:500])
        return False


def retry_unhandled_deposits(*, limit: int = 100) -> int:
    """Hand over again the deposits whose handler failed; returns how many were handled now."""
    pending = Deposit.objects.filter(
        handled_at__isnull=True, status__in=(Deposit.Status.CONFIRMED, Deposit.Status.WITHDRAWN)
    ).order_by("created_at")[:limit]
    return sum(handle_deposit(deposit) for deposit in pending)
