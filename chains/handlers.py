"""Who is told what the chains did for them: handlers registered by owner kind.

The chains app watches addresses and sends transactions for apps above it,
which it must not import. Each address it watches has an owner
(`"order:<uuid>"`, `"quickpay:<id>"`) and each outbox transaction a business
key (`"order:<uuid>:sweep"`, `"chains:deploy-factory:<id>"`); the part before
the first colon is the owner's kind. An app registers one handler per kind
and event in its `AppConfig.ready`, so every edge up from here is a line of
code that import-linter and a reader can follow:

    @deposit_handler("order")
    def order_deposit_changed(deposit: Deposit) -> None: ...

Handlers run in the transaction that records the change (a deposit confirmed
or withdrawn; an outbox transaction mined or failed); one that raises rolls
it back, and the change is handed over again later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from chains.models import Deposit, OutboxTx

logger = logging.getLogger(__name__)

DepositHandler = Callable[["Deposit"], None]
OutboxHandler = Callable[["OutboxTx"], None]
H = TypeVar("H", bound=Callable)

_deposit_handlers: dict[str, DepositHandler] = {}
_outbox_handlers: dict[str, OutboxHandler] = {}
_deposit_observers: list[DepositHandler] = []
_outbox_observers: list[OutboxHandler] = []


def owner_kind(owner_or_key: str) -> str:
    """`"order"` of `"order:…"`: the kind of an address's owner or of an outbox transaction's key."""
    return owner_or_key.partition(":")[0]


def _register(table: dict[str, H], kind: str, what: str) -> Callable[[H], H]:
    def register(handler: H) -> H:
        existing = table.get(kind)
        if existing is not None and existing is not handler:
            raise ValueError(f"{what} for {kind!r} is already {existing.__module__}.{existing.__qualname__}")
        table[kind] = handler
        return handler

    return register


def deposit_handler(kind: str) -> Callable[[DepositHandler], DepositHandler]:
    """Register the handler of deposits to addresses whose owner is of `kind` (confirmed, or withdrawn)."""
    return _register(_deposit_handlers, kind, "the deposit handler")


def outbox_handler(kind: str) -> Callable[[OutboxHandler], OutboxHandler]:
    """Register the handler of finished (mined or failed) outbox transactions whose key is of `kind`."""
    return _register(_outbox_handlers, kind, "the outbox handler")


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


# --- what a payment asks for, for the devnet wallet (`manage.py pay_order`) --------------------------

PaymentDue = tuple[int, str, str, int]  # (chain id, token, deposit address, amount in base units)
_payables: dict[str, Callable[[str], PaymentDue | None]] = {}


def payable(kind: str) -> Callable[[Callable[[str], PaymentDue | None]], Callable[[str], PaymentDue | None]]:
    """Register how to find what one payment of owner `kind` asks for, by its id (None: no such payment)."""
    return _register(_payables, kind, "the payable lookup")


def payment_due(identifier: str) -> PaymentDue | None:
    """What the payment `identifier` (an order's id, a quick payment's...) asks for, from whichever owner
    kind knows it."""
    for lookup in _payables.values():
        if (due := lookup(identifier)) is not None:
            return due
    return None
