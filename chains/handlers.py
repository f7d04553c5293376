"""Who is told what the chains did for them: handlers registered by owner kind.

The chains app watches addresses and sends transactions for apps above it,
which it must not import. Each address it watches has an owner
(`"order:<uuid>"`, `"quickpay:<id>"`, `"refund:<re_id>"`) and each outbox transaction a business
key (`"order:<uuid>:sweep"`, `"chains:deploy-factory:<id>"`); the part before
the first colon is the owner's kind. An app registers one handler per kind
and event in its `AppConfig.ready`, so every edge up from here is a line of
code that import-linter and a reader can follow:

    @deposit_handler(OwnerKind.ORDER)
    def order_deposit_changed(deposit: Deposit) -> None: ...

The kinds are `OwnerKind`: a handler registered under a name the enum does not have is refused, so the
watched addresses' owners, the outbox's keys and the handlers cannot drift apart. `manage.py wiring` prints
every registration.

Handlers run in the transaction that marks the change handed over (a deposit
confirmed or withdrawn: right after the scan that recorded it commits; an
outbox transaction mined or failed: in the transaction that records it); one
that raises rolls it back, and the change is handed over again later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from chains.keys import OwnerKind, owner_kind

if TYPE_CHECKING:
    from chains.models import Deposit, OutboxTx

logger = logging.getLogger(__name__)

DepositHandler = Callable[["Deposit"], None]
OutboxHandler = Callable[["OutboxTx"], None]
SightingHandler = Callable[[int, list["Sighting"], int], None]
H = TypeVar("H", bound=Callable)


@dataclass(frozen=True)
class Sighting:
    """A token transfer to a watched address in a block not yet confirmed (chains.watcher.sight): not a
    deposit, only what the owner may act on within its limits before the deposit is counted."""

    owner: str
    tx_hash: str
    log_index: int
    block_number: int
    block_hash: str
    from_address: str
    to_address: str
    token: str
    amount: int


_deposit_handlers: dict[str, DepositHandler] = {}
_outbox_handlers: dict[str, OutboxHandler] = {}
_included_handlers: dict[str, OutboxHandler] = {}
_broadcast_handlers: dict[str, OutboxHandler] = {}
_sighting_handlers: dict[str, SightingHandler] = {}
_deposit_observers: list[DepositHandler] = []
_outbox_observers: list[OutboxHandler] = []


def _register(table: dict[str, H], kind: OwnerKind, what: str) -> Callable[[H], H]:
    if not isinstance(kind, OwnerKind):
        raise TypeError(f"{what}: {kind!r} is not a chains.keys.OwnerKind")

    def register(handler: H) -> H:
        existing = table.get(kind)
        if existing is not None and existing is not handler:
            raise ValueError(f"{what} for {kind!r} is already {existing.__module__}.{existing.__qualname__}")
        table[kind] = handler
        return handler

    return register


def deposit_handler(kind: OwnerKind) -> Callable[[DepositHandler], DepositHandler]:
    """Register the handler of deposits to addresses whose owner is of `kind` (confirmed, or withdrawn)."""
    return _register(_deposit_handlers, kind, "the deposit handler")


def outbox_handler(kind: OwnerKind) -> Callable[[OutboxHandler], OutboxHandler]:
    """Register the handler of finished (mined or failed) outbox transactions whose key is of `kind`."""
    return _register(_outbox_handlers, kind, "the outbox handler")


def outbox_included_handler(kind: OwnerKind) -> Callable[[OutboxHandler], OutboxHandler]:
    """Register the handler told that an outbox transaction whose key is of `kind` is in a block and
    succeeded there, before it has its chain's confirmations (its outcome is still `broadcast`: a reorg may
    take it away, and it is mined again at its nonce). Optional: a kind without one waits for the outcome.
    Called outside any transaction of the outbox's, possibly more than once per transaction."""
    return _register(_included_handlers, kind, "the outbox included handler")


def outbox_broadcast_handler(kind: OwnerKind) -> Callable[[OutboxHandler], OutboxHandler]:
    """Register the handler told that a transaction of an owner of `kind` was broadcast (the first time, or
    again), in the process that broadcast it, once that is recorded: what waits for the transaction to be
    known to the chain, not for its block (the relay provider's fast fill). Optional; it must be quick."""
    return _register(_broadcast_handlers, kind, "the outbox broadcast handler")


def sighting_handler(kind: OwnerKind) -> Callable[[SightingHandler], SightingHandler]:
    """Register the handler of payments seen on first sight to addresses whose owner is of `kind`: ERC-20
    transfers of listed tokens in blocks above the confirmed ones, on a chain whose row sets
    `front_confirmations` (chains.watcher). Called once per scan with all of that kind's sightings (chain id,
    sightings, the confirmed end of the scan), after the scan committed; nothing is recorded as a deposit: the
    same transfers are deposits once confirmed. Optional: a kind without one waits for its deposits."""
    return _register(_sighting_handlers, kind, "the sighting handler")


def sighted(chain_id: int, sightings: list[Sighting], confirmed_through: int) -> None:
    """Hand a scan's sightings (possibly none) to their owners' handlers, by kind. Every kind's handler is
    called, sightings or not: the confirmed end moved, and what it fronted earlier may now be settled."""
    by_kind: dict[str, list[Sighting]] = {kind: [] for kind in _sighting_handlers}
    for sighting in sightings:
        kind = owner_kind(sighting.owner)
        if kind in by_kind:
            by_kind[kind].append(sighting)
    for kind, mine in by_kind.items():
        try:
            _sighting_handlers[kind](chain_id, mine, confirmed_through)
        except Exception:  # a payment seen and not fronted waits for its confirmations, as any other
            logger.exception("Sightings on chain %s: the %s handler failed", chain_id, kind)


def deposit_observer(observer: DepositHandler) -> DepositHandler:
    """Register an observer of every deposit of any owner (the ledger): called before the owner's handler,
    in the same transaction, each time a deposit is handed over (confirmed, or withdrawn)."""
    if observer not in _deposit_observers:
        _deposit_observers.append(observer)
    return observer


def outbox_observer(observer: OutboxHandler) -> OutboxHandler:
    """Register an observer of every outbox transaction whose outcome on chain was recorded or changed: it
    finished (mined or failed), its block left the chain, or a reorg moved it to another block. Called in the
    transaction that records the change, before the key's handler; it reads the row as it is now."""
    if observer not in _outbox_observers:
        _outbox_observers.append(observer)
    return observer


def outbox_changed(tx: OutboxTx) -> None:
    """Tell the observers that `tx`'s recorded outcome changed (a reorg); its handler is not asked again."""
    for observer in _outbox_observers:
        observer(tx)


# --- follow-ups done here -----------------------------------------------------------------------------------

# A deposit handed over by a task of the settlement queue (a burst: chains.tasks.hand_over_deposit) is followed
# up in that task, once its transaction commits: the order it paid is settled there, not from the back of the
# queue the task is already a worker of.
_follow_ups: ContextVar[list[Callable[[], None]] | None] = ContextVar("follow_ups", default=None)


@contextmanager
def following_up_here() -> Iterator[list[Callable[[], None]]]:
    """Within: `follow_up` keeps the follow-ups of what commits, in the list this yields, for the caller to run
    once the block ends (a transaction rolled back keeps none)."""
    collected: list[Callable[[], None]] = []
    token = _follow_ups.set(collected)
    try:
        yield collected
    finally:
        _follow_ups.reset(token)


def follow_up(work: Callable[[], None]) -> bool:
    """Keep `work` to run in this process once the current transaction commits, when a hand-over here asked
    for its follow-ups (`following_up_here`); False otherwise: the caller queues it."""
    from django.db import transaction

    collected = _follow_ups.get()
    if collected is None:
        return False
    transaction.on_commit(lambda: collected.append(work))
    return True


def deposit_changed(deposit: Deposit) -> None:
    """Hand a deposit to its observers, then to its owner's handler. An owner nobody registered is logged:
    the deposit is recorded and counted as handled, and staff find it by its owner."""
    for observer in _deposit_observers:
        observer(deposit)
    kind = owner_kind(deposit.owner)
    handler = _deposit_handlers.get(kind)
    if handler is None:
        logger.warning("Deposit %s to %s: no handler for owner kind %r", deposit.pk, deposit.to_address, kind)
        return
    handler(deposit)


def outbox_finished(tx: OutboxTx) -> None:
    """Hand a finished outbox transaction to its observers, then to the handler of its key's kind."""
    outbox_changed(tx)
    kind = owner_kind(tx.key)
    handler = _outbox_handlers.get(kind)
    if handler is None:
        logger.warning("Outbox %s finished %s: no handler for kind %r", tx.key, tx.status, kind)
        return
    handler(tx)


def outbox_included(tx: OutboxTx) -> None:
    """Tell the handler of `tx`'s kind, if it has one, that `tx` is in a block and succeeded there."""
    handler = _included_handlers.get(owner_kind(tx.key))
    if handler is not None:
        handler(tx)


def outbox_broadcast(txs: list[OutboxTx]) -> None:
    """Tell the handlers of the transactions' kinds, where they have one, that each was just broadcast. A
    handler that fails is logged: the transaction is out, and its outcome is followed as any other's."""
    for tx in txs:
        handler = _broadcast_handlers.get(owner_kind(tx.key))
        if handler is None:
            continue
        try:
            handler(tx)
        except Exception:
            logger.exception("Outbox %s: the broadcast handler failed", tx.key)


# --- what a payment asks for, for the devnet wallet (`manage.py pay_order`) --------------------------

PaymentDue = tuple[int, str, str, int]  # (chain id, token, deposit address, amount in base units)
_payables: dict[str, Callable[[str], PaymentDue | None]] = {}


def payable(
    kind: OwnerKind,
) -> Callable[[Callable[[str], PaymentDue | None]], Callable[[str], PaymentDue | None]]:
    """Register how to find what one payment of owner `kind` asks for, by its id (None: no such payment)."""
    return _register(_payables, kind, "the payable lookup")


def payment_due(identifier: str) -> PaymentDue | None:
    """What the payment `identifier` (an order's id, a quick payment's...) asks for, from whichever owner
    kind knows it."""
    for lookup in _payables.values():
        if (due := lookup(identifier)) is not None:
            return due
    return None


# --- what `manage.py chains check` shows beside the chains ---------------------------------------------

CheckSection = Callable[[], list[list[str]]]
_check_sections: dict[str, CheckSection] = {}


def check_section(kind: OwnerKind) -> Callable[[CheckSection], CheckSection]:
    """Register a table (a header row, then rows) that `chains check` prints under the chains' own."""
    return _register(_check_sections, kind, "the check section")


def check_sections() -> list[list[list[str]]]:
    return [section() for _, section in sorted(_check_sections.items())]


def registrations() -> dict[str, list[tuple[str, Callable]]]:
    """Every handler and observer registered here, by table: what `manage.py wiring` prints."""
    return {
        "deposit handlers": sorted(_deposit_handlers.items()),
        "outbox handlers": sorted(_outbox_handlers.items()),
        "outbox included handlers": sorted(_included_handlers.items()),
        "outbox broadcast handlers": sorted(_broadcast_handlers.items()),
        "sighting handlers": sorted(_sighting_handlers.items()),
        "payable lookups": sorted(_payables.items()),
        "check sections": sorted(_check_sections.items()),
        "deposit observers": [("*", observer) for observer in _deposit_observers],
        "outbox observers": [("*", observer) for observer in _outbox_observers],
    }
