"""An order's lifecycle: every transition, and what it announces (`orders.events`); the moves it may make are
declared in `orders.states`, which `order_transition` enforces.

    scanning_deposit | waiting_stripe_payment
        -> quoting_after_deposit (Paid) -> sending_token_from_vault -> relay [-> executing]
        -> executed (Executed)
    any active status -> failure (Failed) [-> refunding -> refunded (Refunded)]
    scanning_deposit | waiting_stripe_payment -> expired (Expired, when not paid in time)

Each transition is one conditional update under the order's row lock, so a
replayed chain event or a second worker changes nothing, and each that
happens is recorded (`OrderStatusChange`). What a transition means for
sessions, links, webhooks and the ledger is theirs to do, as subscribers.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from chains.incidents import incident_record
from chains.keys import OwnerKind, Step, extensions_of, outbox_key, owner_of
from chains.models import Incident, OutboxTx
from core.tasks import Later
from observability.orders import observe_transition
from orders import events, states
from orders.accounting import CARD_PAYMENT_PREFIX, card_payment_posted
from orders.models import DepositTx, InventoryFront, Order, OrderStatusChange, RefundTx, RelayTx
from orders.types import CALLS_CONTRACT

SETTLE_ORDER_TASK = Later("orders.tasks.settle_order_task")

logger = logging.getLogger(__name__)

ADVANCE: dict[str, tuple[str, ...]] = {  # target status -> the statuses it may follow
    Order.Status.SENDING_TOKEN_FROM_VAULT: (Order.Status.QUOTING_AFTER_DEPOSIT,),
    Order.Status.RELAY: (Order.Status.SENDING_TOKEN_FROM_VAULT,),
    Order.Status.EXECUTING: (Order.Status.RELAY,),
}
TERMINAL = {Order.Status.EXECUTED, Order.Status.REFUNDED, Order.Status.FAILURE, Order.Status.EXPIRED}
WAITING = states.WAITING  # for a deposit or a card
# How long after an order expires its deposit address is still watched, so that a late payment is
# seen (and marked for refund) rather than lost.
WATCH_AFTER_EXPIRY = timedelta(days=1)


@transaction.atomic
def order_transition(
    order: Order, *, from_statuses, to_status: str, reason: str = "", actor: str = "system", **fields
) -> bool:
    """Move the order to `to_status` if it is in one of `from_statuses`, and record the change; refreshes it."""
    from_statuses = list(from_statuses)
    found = (
        Order.objects.select_for_update()
        .filter(pk=order.pk)
        .values_list("status", "status_changed_at", "received_deposit_at")
        .first()
    )
    current, since, deposit_at = found if found is not None else (None, None, None)
    if current is not None and current in from_statuses:
        states.check_move(current, to_status)  # the declared machine (orders.states) lists every move
    changed = (
        current is not None
        and current in from_statuses
        and states.ORDER.move(
            Order.objects.filter(pk=order.pk),
            from_=(current,),
            to=to_status,
            status_changed_at=timezone.now(),
            **fields,
        )
    )
    if changed:
        OrderStatusChange.objects.create(
            order_id=order.pk,
            from_status=current or "",
            to_status=to_status,
            reason=reason[:500],
            actor=actor[:150],
        )
        logger.info("Order %s: %s -> %s (%s)", order.pk, current, to_status, reason or "-")
        deposit_at = fields.get("received_deposit_at", deposit_at)
        transaction.on_commit(
            partial(
                observe_transition, order.type, current or "", to_status, since, deposit_at, timezone.now()
            )
        )
    order.refresh_from_db()
    if changed:
        events.announce(events.Changed(order))
    return bool(changed)


def has_fixed_price(order: Order) -> bool:
    """What arrives beyond the order's `srcAmount` goes back to the payer: a contract call's price, and every
    order its creator fixed the price of (a merchant's checkout names what the merchant is paid)."""
    return order.type in CALLS_CONTRACT or order.fixed_price


def _lock(order: Order) -> Order:
    """The order's owners lock their rows first (`Locking`), then the order's row is locked and read."""
    events.announce(events.Locking(order))
    return Order.objects.select_for_update().get(pk=order.pk)


def _late(order: Order, waiting_for: str) -> bool:
    """A payment that arrives after the order stopped waiting for it. (A session's expiry stops its waiting
    order in the same transaction, under the session's lock that `Locking` takes first.) An order delivered on
    first sight still waits for the payment seen until its deposits cover it (orders.fronting)."""
    return order.status != waiting_for and _paid_on_sight(order) is None


def _paid_on_sight(order: Order) -> int | None:
    """What the order was settled for on first sight of its payment, while its deposits do not cover it yet
    (None: not so settled, covered, or lost)."""
    executing = (Order.Status.RELAY, Order.Status.EXECUTING, Order.Status.EXECUTED)
    if order.status not in executing or "onSight" not in (order.settlement or {}):
        return None
    awaited = InventoryFront.objects.filter(
        order=order, payment_block__isnull=False, covered_at__isnull=True, lost_at__isnull=True
    ).exists()
    return int((order.settlement or {}).get("srcAmountReceived") or 0) if awaited else None


def _paid(order: Order, *, from_status: str, reason: str) -> None:
    if order_transition(
        order,
        from_statuses=[from_status],
        to_status=Order.Status.QUOTING_AFTER_DEPOSIT,
        reason=reason,
        received_deposit_at=timezone.now(),
    ):
        events.announce(events.Paid(order))


@transaction.atomic
def order_record_deposit(
    *,
    order: Order,
    chain: int,
    tx_hash: str,
    amount: int,
    from_address: str | None,
    log_index: int = -1,
    block_number: int | None = None,
    block_hash: str = "",
    token: str | None = None,
    deposit_id: int | None = None,
) -> Order:
    """Record a confirmed deposit, once; when the order's token reaches `srcAmount`, move on to quoting.

    A deposit of another token is recorded and not counted; one that arrives
    after the order stopped waiting (expired, or its session expired) is
    marked for refund, and so is the surplus of a fixed-price order. Partial
    deposits are summed: the order keeps scanning until they reach its price.
    """
    order = _lock(order)
    token = token or order.src_token_address
    counted = token.lower() == order.src_token_address.lower()
    late = _late(order, Order.Status.SCANNING_DEPOSIT)
    reason = (
        DepositTx.RefundReason.WRONG_TOKEN if not counted else DepositTx.RefundReason.LATE if late else ""
    )
    deposit, created = DepositTx.objects.get_or_create(
        order=order,
        chain=chain,
        tx_hash=tx_hash,
        log_index=log_index,
        defaults={
            "amount": amount,
            "from_address": from_address,
            "block_number": block_number,
            "block_hash": block_hash,
            "token_address": token,
            "counted": counted and not late,
            "refund_reason": reason,
            "refund_amount": amount if reason else None,
            "deposit_id": deposit_id,
        },
    )
    if created:
        events.announce(events.Changed(order))
    if not created or reason:
        return order
    total = sum(int(d.amount) for d in order.deposit_txs.filter(counted=True))
    on_sight = _paid_on_sight(order)
    if on_sight is not None:  # settled for the payment seen: what arrives beyond it goes back
        surplus = max(total - on_sight, 0)
    else:
        surplus = max(total - int(order.src_amount), 0) if has_fixed_price(order) else 0
    if surplus:
        DepositTx.objects.filter(pk=deposit.pk).update(
            refund_reason=DepositTx.RefundReason.SURPLUS, refund_amount=surplus
        )
    events.announce(events.DepositCounted(order, deposit=deposit, received=total, surplus=surplus))
    if total >= int(order.src_amount):
        _paid(order, from_status=Order.Status.SCANNING_DEPOSIT, reason=f"{total} received")
    return order


@transaction.atomic
def order_paid_on_sight(*, order: Order, settlement: dict, reason: str) -> bool:
    """The solver's delivery against the payment seen on first sight is in a block (orders.fronting): the order
    is paid (`Paid`) and moves on to the relay step with `settlement`, before its deposit has its
    confirmations; the deposit is counted, swept and booked when it has them. False if it no longer waits."""
    order = _lock(order)
    if order.status != Order.Status.SCANNING_DEPOSIT:
        return False
    with events.changes_once():  # three moves, one render of what the order shows
        _paid(order, from_status=Order.Status.SCANNING_DEPOSIT, reason=reason)
        moved = order_transition(
            order,
            from_statuses=[Order.Status.QUOTING_AFTER_DEPOSIT],
            to_status=Order.Status.SENDING_TOKEN_FROM_VAULT,
            reason=reason,
            settlement=settlement,
        )
        return moved and order_transition(
            order,
            from_statuses=[Order.Status.SENDING_TOKEN_FROM_VAULT],
            to_status=Order.Status.RELAY,
            reason="delivered from inventory on first sight: the deposit is swept once confirmed",
        )


@transaction.atomic
def order_payment_lost(*, order: Order, error: str) -> None:
    """The payment an order was delivered against on first sight never reached its confirmations, after the
    order was executed: the delivery stands and the order says so (`errorDetails`); what it counted of other
    payments goes back to their senders."""
    order = _lock(order)
    settlement = dict(order.settlement or {}) | {"paymentLost": error[:500]}
    Order.objects.filter(pk=order.pk).update(error_details=error[:2000], settlement=settlement)
    order.deposit_txs.filter(counted=True, refund_amount__isnull=True).update(
        refund_reason=DepositTx.RefundReason.LATE, refund_amount=F("amount")
    )
    order.refresh_from_db()
    events.announce(events.Changed(order))


@transaction.atomic
def order_withdraw_deposit(*, order: Order, deposit_id: int) -> Order:
    """A reorg took one of the order's deposits off the chain, and it did not come back: it stops counting.

    While the order still waits for its payment and nothing was sent for the
    deposit, that is all: the order waits for the rest again. Otherwise (the
    order moved on because of it, or a refund of it was asked for) staff must
    look: an incident about the order holds its settlement, so nothing more is
    sent for it (orders/settlement.py).
    """
    order = _lock(order)
    deposit = DepositTx.objects.filter(order=order, deposit_id=deposit_id, withdrawn_at__isnull=True).first()
    if deposit is None:
        return order
    DepositTx.objects.filter(pk=deposit.pk).update(
        withdrawn_at=timezone.now(), counted=False, refund_amount=None
    )
    events.announce(events.Changed(order))
    refund_key = outbox_key(
        OwnerKind.ORDER, order.pk, Step.REFUND, deposit.pk
    )  # and its `:rest`, `:attempt<n>`
    refund_asked = OutboxTx.objects.filter(
        Q(key=refund_key) | Q(key__startswith=extensions_of(refund_key))
    ).exists()
    moved_on = deposit.counted and order.status != Order.Status.SCANNING_DEPOSIT
    if not (refund_asked or moved_on):
        logger.warning(
            "Order %s: deposit %s (%s) was taken off the chain by a reorg; it no longer counts",
            order.pk,
            deposit.pk,
            deposit.tx_hash,
        )
        return order
    what = "was counted" if moved_on else "was sent back"
    incident_record(
        kind=Incident.Kind.DEPOSIT_REORGED,
        subject=owner_of(OwnerKind.ORDER, order.pk),
        chain_id=deposit.chain,
        summary=(
            f"order {order.pk} ({order.status}): its deposit of {deposit.amount} in {deposit.tx_hash} was taken "
            f"off the chain by a reorg after it {what}; nothing more is sent for the order until staff resolve this"
        ),
        details={
            "deposit": deposit.pk,
            "tx_hash": deposit.tx_hash,
            "amount": str(deposit.amount),
            "status": order.status,
        },
    )
    return order


def is_card_deposit(deposit: DepositTx) -> bool:
    return deposit.tx_hash.startswith(CARD_PAYMENT_PREFIX)


@transaction.atomic
def order_record_card_payment(*, payment_intent_id: str) -> Order | None:
    """vendorB charged the card of a `waiting_stripe_payment` order: the vault fronts the USDC.

    Recorded as a deposit from the vault of the order's price (its `tx_hash` is
    the payment intent's id, once), and the order moves on to quoting. A
    payment for an order that stopped waiting (expired, or its session did) is
    recorded for refund to the card instead. None when no order has this intent.
    """
    order = Order.objects.filter(vendor_b_payment_intent_id=payment_intent_id).first()
    if order is None or not payment_intent_id.startswith(CARD_PAYMENT_PREFIX):
        return None
    order = _lock(order)
    late = _late(order, Order.Status.WAITING_STRIPE_PAYMENT)
    amount = int(order.src_amount)
    deposit, created = DepositTx.objects.get_or_create(
        order=order,
        chain=order.src_chain,
        tx_hash=payment_intent_id,
        log_index=-1,
        defaults={
            "amount": amount,
            "from_address": settings.VAULT_ADDRESS,
            "token_address": order.src_token_address,
            "counted": not late,
            "refund_reason": DepositTx.RefundReason.LATE if late else "",
            "refund_amount": amount if late else None,
        },
    )
    if created:
        card_payment_posted(order, deposit)
        events.announce(events.Changed(order))
    if created and not late:
        _paid(
            order, from_status=Order.Status.WAITING_STRIPE_PAYMENT, reason=f"card payment {payment_intent_id}"
        )
    return order


@transaction.atomic
def order_record_relay_route(*, order: Order, relay: dict) -> dict:
    """The relay provider's route for the order (`settlement.relay`), recorded once: when another worker
    recorded one first, theirs is the one paid, and answered."""
    current: dict = Order.objects.select_for_update().get(pk=order.pk).settlement or {}
    if current.get("relay"):
        return current["relay"]
    Order.objects.filter(pk=order.pk).update(settlement=current | {"relay": relay})
    events.announce(events.Changed(order))
    return relay


@transaction.atomic
def order_record_relay_txs(*, order: Order, txs: list[tuple[int, str, str]]) -> None:
    """The delivery's transactions (chain, hash, status) on the destination chain, each recorded once."""
    recorded = [
        RelayTx.objects.get_or_create(
            order=order, tx_hash=tx_hash, defaults={"chain": chain, "status": status}
        )[1]
        for chain, tx_hash, status in txs
    ]
    if any(recorded):
        events.announce(events.Changed(order))


@transaction.atomic
def order_record_refund_tx(
    *, order: Order, deposit: DepositTx, tx_hash: str, chain: int, amount: int, succeeded: bool
) -> tuple[RefundTx, bool]:
    """A refund of `deposit` that reached the chain (or the card's vendor), recorded once: (it, created)."""
    refund, created = RefundTx.objects.get_or_create(
        order=order,
        deposit=deposit,
        tx_hash=tx_hash,
        defaults={
            "chain": chain,
            "amount": amount,
            "status": RefundTx.Status.SUCCESS if succeeded else RefundTx.Status.FAILURE,
        },
    )
    if created:
        events.announce(events.Changed(order))
    return refund, created


def order_advance(*, order: Order, to_status: str, actor: str = "system") -> bool:
    """One step along the happy path (quoting -> sending -> relay -> executing)."""
    return order_transition(order, from_statuses=ADVANCE[to_status], to_status=to_status, actor=actor)


@transaction.atomic
def order_mark_executed(
    *,
    order: Order,
    execute_tx: dict | None = None,
    actual_dst_amount: str | None = None,
    actor: str = "system",
) -> bool:
    """The outcome arrived: `executed`, with the order's points; `Executed` is announced."""
    from_status = Order.Status.EXECUTING if order.type in CALLS_CONTRACT else Order.Status.RELAY
    settlement = dict(order.settlement or {})
    if actual_dst_amount is not None:
        settlement["actualDstAmount"] = actual_dst_amount
    if not order_transition(
        order,
        from_statuses=[from_status],
        to_status=Order.Status.EXECUTED,
        reason="delivered" + (f" in {execute_tx['txHash']}" if execute_tx else ""),
        actor=actor,
        filled_at=timezone.now(),
        execute_tx=execute_tx,
        points=order.points_amount,
        settlement=settlement or None,
    ):
        return False
    events.announce(events.Executed(order))
    return True


@transaction.atomic
def order_fail(*, order: Order, error: str, actor: str = "system") -> bool:
    """The order cannot complete: `failure`, then `refunding` when it holds a deposit; `Failed` is announced
    (and `Refunded` once the money is back, `order_refunded`)."""
    active = [s for s in Order.Status.values if s not in TERMINAL and s != Order.Status.REFUNDING]
    if not order_transition(
        order,
        from_statuses=active,
        to_status=Order.Status.FAILURE,
        reason=error,
        actor=actor,
        error_details=error[:2000],
    ):
        return False
    refunding = order.deposit_txs.exists()
    events.announce(events.Failed(order, error=order.error_details or error, refunding=refunding))
    if refunding:
        _refunding(order, Order.Status.FAILURE, "the deposit goes back to its sender", actor)
    return True


def _refunding(order: Order, from_status: str, reason: str, actor: str) -> None:
    order_transition(
        order, from_statuses=[from_status], to_status=Order.Status.REFUNDING, reason=reason, actor=actor
    )


@transaction.atomic
def order_refunded(*, order: Order, refund_tx_hash: str | None, actor: str = "system") -> bool:
    """Every deposit is back with its sender: `refunded`; `Refunded` is announced with the refund's hash."""
    if not order_transition(
        order,
        from_statuses=[Order.Status.REFUNDING],
        to_status=Order.Status.REFUNDED,
        reason=f"refunded in {refund_tx_hash}" if refund_tx_hash else "nothing to refund",
        actor=actor,
    ):
        return False
    error = order.error_details or "expired"
    events.announce(events.Refunded(order, error=error, refund_tx_hash=refund_tx_hash))
    return True


@transaction.atomic
def order_expire(*, order: Order, reason: str, announce: bool = True, actor: str = "system") -> bool:
    """A waiting order stops waiting: `expired` (`Expired` announced unless `announce` is off: the owner
    that expired it said so itself). One that holds part of its price goes on to `refunding` at once, and its
    settlement is asked for after commit: the money is never left at the deposit address. False if it was not
    waiting."""
    if not order_transition(
        order, from_statuses=WAITING, to_status=Order.Status.EXPIRED, reason=reason, actor=actor
    ):
        return False
    if announce:
        events.announce(events.Expired(order))
    if order.deposit_txs.filter(withdrawn_at__isnull=True).exists():
        _refunding(
            order,
            Order.Status.EXPIRED,
            "it expired holding part of its price: that goes back to the payer",
            actor,
        )
        order_id = str(order.pk)
        transaction.on_commit(lambda: SETTLE_ORDER_TASK.delay(order_id))
    return True


def orders_expire_unpaid(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Orders still waiting for their deposit after `expiredAt` become `expired`; `Expired` is announced.

    An order that expires unpaid emits no payment event (nothing was paid); one that received part of its
    price is refunded (order_expire).
    """
    now = now or timezone.now()
    expired = 0
    while True:
        due = list(Order.objects.filter(status__in=WAITING, expired_at__lte=now)[:batch_size])
        for order in due:
            with transaction.atomic():
                events.announce(events.Locking(order))  # the owners' rows first, as a deposit locks them
                if order_expire(order=order, reason="not paid in time"):
                    expired += 1
        if len(due) < batch_size:
            return expired
