"""What happened to an order, announced to whoever subscribed: the order's own session and webhooks, the
link checkout, the ledger.

Orders know nothing of the apps above them. An order created for one of them
carries its `owner` (`"checkout"` for a payment link's order; `""` for an
order of the order interface), and each app subscribes, in its
`AppConfig.ready`, to the events of its own orders (or of all, with
`owner=ANY`):

    @events.on(events.Executed, owner=events.OrderOwner.CHECKOUT)
    def checkout_order_executed(event: events.Executed) -> None: ...

Owners are `OrderOwner`: a subscription under a name the enum does not have is refused, and `manage.py
wiring` prints every subscription.

Every event is announced inside the transaction of the change it describes,
after the change; a subscriber that raises rolls the change back. Subscribers
run in the order they subscribed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from orders.models import DepositTx, Order
    from platform_api.models import Organization


class OrderOwner(StrEnum):
    """Which app an order belongs to (`Order.owner`): whose subscribers hear of it."""

    INTERFACE = ""  # the order interface's own orders (checkout.interface: their sessions and payment events)
    CHECKOUT = "checkout"  # a payment link's or platform checkout session's order (checkout.subscribers)
    REFUND = "refund"  # a merchant's refund delivered to another chain or token (refunds.crosschain)


ANY = None  # subscribe to every order's events, whatever its owner


@dataclass(frozen=True)
class OrderEvent:
    order: Order


@dataclass(frozen=True)
class Locking(OrderEvent):
    """The order's row is about to be locked to record a payment: lock your rows of it first (always in this
    order, as the owner's own expiry does, so a payment and an expiry never deadlock)."""


@dataclass(frozen=True)
class DepositCounted(OrderEvent):
    """A deposit of the order's token counted toward its price: `received` in all so far, `surplus` of it
    beyond a fixed price goes back."""

    deposit: DepositTx
    received: int
    surplus: int


@dataclass(frozen=True)
class Changed(OrderEvent):
    """Something a payer watching the order sees changed: its status, or a deposit recorded or withdrawn.
    Announced after each such change (with the event that names it, if any), for caches of what it shows."""


@dataclass(frozen=True)
class Paid(OrderEvent):
    """What arrived reached the order's price (deposits, or a card payment): it settles now."""


@dataclass(frozen=True)
class Executed(OrderEvent):
    """The recipient got what the order promised."""


@dataclass(frozen=True)
class Failed(OrderEvent):
    """The order cannot complete. With `refunding`, what was paid is on its way back (`Refunded` follows);
    without, nothing was paid and this is the end."""

    error: str
    refunding: bool


@dataclass(frozen=True)
class Refunded(OrderEvent):
    """Every deposit of a failed or expired order is back with its sender."""

    error: str
    refund_tx_hash: str | None


@dataclass(frozen=True)
class Expired(OrderEvent):
    """The order was not paid in time. (An order its session's expiry stopped is not announced: the
    session's owner did that.)"""


@dataclass(frozen=True)
class RefundPaid(OrderEvent):
    """Money went back to a payer: one refund mined (or a card refund made), whatever the order's state (a
    failed order's deposit, the surplus over a fixed price, a late or unlisted payment)."""

    refund: Any  # orders.models.RefundTx


E = TypeVar("E", bound=OrderEvent)
F = TypeVar("F", bound=Callable[..., None])
_subscribers: list[tuple[type[OrderEvent], str | None, Callable[[Any], None]]] = []


def subscribe(event_type: type[E], handler: Callable[[E], None], *, owner: OrderOwner | None) -> None:
    """Call `handler(event)` for each `event_type` of the orders whose owner is `owner` (ANY: all orders).
    Subscribing the same handler twice is harmless."""
    if owner is not ANY and not isinstance(owner, OrderOwner):
        raise TypeError(f"{owner!r} is not an orders.events.OrderOwner")
    entry = (event_type, owner, handler)
    if entry not in _subscribers:
        _subscribers.append(entry)


def on(*event_types: type[OrderEvent], owner: OrderOwner | None) -> Callable[[F], F]:
    """Subscribe the decorated function to `event_types` of the orders of `owner` (ANY: every order). The
    app's `AppConfig.ready` imports the module; subscribers run in the order they were defined (a module
    imported by another's runs first)."""

    def register(handler: F) -> F:
        for event_type in event_types:
            subscribe(event_type, handler, owner=owner)
        return handler

    return register


_held = threading.local()  # each thread's orders whose `Changed` waits for the end of `changes_once`


@contextmanager
def changes_once() -> Iterator[None]:
    """Within (in one transaction): each order's `Changed` is announced once, at the end, with the order as
    it was last announced, still in the caller's transaction. `Changed` is for caches of what an order shows
    (its rendered body, its session's page): a run of moves renders them once, not once per move. Nothing is
    announced if the block raises (its transaction rolls back)."""
    if getattr(_held, "orders", None) is not None:
        yield  # within another: the outer one announces
        return
    held: dict[Any, Any] = {}  # order id -> the order last announced
    _held.orders = held
    try:
        yield
    finally:
        _held.orders = None
    for order in held.values():
        announce(Changed(order))


def announce(event: OrderEvent) -> None:
    """Tell the subscribers of this event and of the order's owner, in the caller's transaction."""
    held = getattr(_held, "orders", None)
    if held is not None and type(event) is Changed:
        held[event.order.pk] = event.order
        return
    for event_type, owner, handler in list(_subscribers):
        if isinstance(event, event_type) and owner in (ANY, event.order.owner):
            handler(event)


# --- the one question orders ask an app above: may this order pay that session? ----------------------------

SessionBinder = Callable[..., "Organization | None"]
_session_binder: list[SessionBinder] = []


def session_binder(binder: SessionBinder) -> SessionBinder:
    """Register the function that checks an order interface order's `checkoutSessionId` (the checkout's):
    `binder(session_id, organization, lock=...)` raises `core.errors` (unknown, not open, already paid by an
    order) or answers the organization the order belongs to (the key's, else the session's). `lock=True` runs
    in the order's creating transaction and holds the session's row until it commits. One binder."""
    if _session_binder and _session_binder[0] is not binder:
        raise RuntimeError(f"a session binder is registered already: {_session_binder[0].__qualname__}")
    _session_binder[:] = [binder]
    return binder


def bind_session(session_id: str, organization: Organization | None, *, lock: bool) -> Organization | None:
    if not _session_binder:
        raise RuntimeError("no session binder: the checkout app registers one (checkout.interface)")
    return _session_binder[0](session_id, organization, lock=lock)


def binders() -> list[SessionBinder]:
    return list(_session_binder)


def subscriptions() -> list[tuple[str, str, Callable[[Any], None]]]:
    """(event, owner, handler) of every subscription, in the order they run: what `manage.py wiring` prints."""
    return [
        (event_type.__name__, "*" if owner is ANY else (owner or "interface"), handler)
        for event_type, owner, handler in _subscribers
    ]
