"""Settlement: from a paid order to its outcome on the destination chain, or its money back.

`settle_order` drives one order as far as it can go now and returns; it runs
as a task when a deposit arrives, when one of the order's outbox transactions
finishes, and from `settle_stuck_orders`, `manage.py settle_order` and the
admin. Every move is a conditional update (orders.lifecycle.order_transition) and
every transaction is asked for by business key (chains/outbox.py), so
running it twice, or in two workers at once, changes nothing more.

    quoting_after_deposit    re-price what arrived; below the payer's
                             expectation less SETTLEMENT_SLIPPAGE_BPS: SLIPPAGE
    sending_token_from_vault the factory sweeps the deposit address into the
                             vault                       order:<id>:sweep
                             (a solver that pays from its own inventory, the
                             devnet solver, moves on at once and delivers
                             beside the sweep; the sweep is checked when mined)
    relay                    the relay provider delivers on the destination
                             (orders/relays.py)          order:<id>:relay
    executing                contract types: the call    order:<id>:execute
    executed                 points, filledAt, payment.completed,
                             checkout.completed

A failure at any step makes the order `failure`, then `refunding`: each
deposit goes back to its sender from the vault (order:<id>:refund:<deposit>),
after the deposit address was swept, then `refunded` and `payment.failed`.
Deposits the order did not count (another token, after expiry) and the
surplus over a fixed price are refunded the same way whatever the order's
state; an expired order that receives one is `refunding` until it is back.

Nothing moves while one of the order's deposits is in doubt (a reorg took its
block away and it has not been seen again yet), nor while an incident about
the order is open (chains/incidents.py): a deposit withdrawn after it was
counted, or a sweep that moved less than was counted. Staff resolve those.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from chains.handlers import follow_up, outbox_broadcast_handler, outbox_handler, outbox_included_handler
from chains.incidents import incident_open_for, incident_record
from chains.keys import OwnerKind, Step, owner_of
from chains.models import Deposit, Incident, OutboxTx
from chains.outbox import sweep_covers, swept_in_block
from chains.readers import confirmed_receipt, receipt_on
from core.tasks import Later
from ledger.models import Posting
from orders import accounting, fast_fills, fronting, lifecycle, states, vault_ahead
from orders.inventory import inventory_front, inventory_swept
from orders.models import DepositTx, InventoryFront, Order, RefundTx, RelayTx
from orders.pricing import Slipped, priced
from orders.providers import ProviderUnavailable, QuoteRejected
from orders.refunds import refund_deposits
from orders.relays import (
    FAILED,
    PENDING,
    DevnetSolver,
    RelayProvider,
    get_relay_provider,
)
from orders.sweeps import order_sweep
from orders.types import ExecutionInvalid

SETTLE_ORDER_TASK = Later("orders.tasks.settle_order_task")

logger = logging.getLogger(__name__)


Status = Order.Status


SETTLING = (
    Status.QUOTING_AFTER_DEPOSIT,
    Status.SENDING_TOKEN_FROM_VAULT,
    Status.RELAY,
    Status.EXECUTING,
    Status.REFUNDING,
)


def settle_order(order_id: uuid.UUID | str, *, actor: str = "system") -> str | None:
    """Move the order on as far as it can go now; its status afterwards (None if there is no such order)."""
    order = Order.objects.filter(pk=order_id).first()
    if order is None:
        return None
    if order_held(order):
        return order.status
    for _ in range(len(STEPS) + 2):
        step = STEPS.get(order.status)
        if not (step and step(order, actor)):
            break  # waiting on a transaction, a provider or a deposit; or done
        order = Order.objects.get(pk=order_id)
    if order.status not in (Status.REFUNDING, Status.REFUNDED):
        refund_deposits(order)  # what the order did not count, or the surplus over its price
    for waiting in DevnetSolver.release(order):
        enqueue_settlement(waiting)  # the solver's allowance for their contract may be free now
    return order.status


def order_held(order: Order) -> bool:
    """Whether the order's settlement waits: a deposit in doubt after a reorg, or an open incident about it."""
    if incident_open_for(owner_of(OwnerKind.ORDER, order.pk)):
        return True
    return order.deposit_txs.filter(
        withdrawn_at__isnull=True, deposit__status=Deposit.Status.ORPHANED
    ).exists()


def _fail(order: Order, error: str, actor: str) -> bool:
    return lifecycle.order_fail(order=order, error=error, actor=actor)


def _received(order: Order) -> int:
    return sum(
        int(amount) for amount in order.deposit_txs.filter(counted=True).values_list("amount", flat=True)
    )


def _quote(order: Order, actor: str) -> bool:
    """Price what arrived; refuse what falls short of the payer's expectation (SLIPPAGE). An order delivered
    on first sight (orders/fronting.py) keeps what was delivered, once its deposits cover the payment seen."""
    relay = get_relay_provider()
    problem = relay.check(order)
    if problem:
        return _fail(order, f"RELAY_UNAVAILABLE: {problem}", actor)
    received = _received(order)
    if lifecycle.has_fixed_price(order):
        received = min(received, int(order.src_amount))  # the surplus goes back
    early = InventoryFront.objects.filter(order=order, payment_block__isnull=False).first()
    if early is not None and not fronting.covered(early, _received(order)):
        return False  # the payment seen is not counted yet: covered by it, or lost (orders.fronting)
    try:
        quoted, deliver = priced(order, received, relay)
    except QuoteRejected as exc:
        return _fail(order, f"NO_ROUTE: {exc}", actor)
    except ProviderUnavailable as exc:
        logger.warning("Order %s: pricing unavailable, retried later: %s", order.pk, exc)
        return False
    except Slipped as exc:
        if early is None:
            return _fail(order, f"SLIPPAGE: {exc}", actor)
        quoted, deliver = exc.quoted, int(early.amount)
    if early is not None:
        deliver = int(early.amount)  # delivered already: the price then was within the payer's expectation
    fee_bps = int((order.fee or {}).get("finalFeeBps") or 0)
    settlement = dict(order.settlement or {}) | {
        "srcAmountReceived": str(received),
        "quotedDstAmount": str(quoted),
        "dstAmount": str(deliver),
        "feeBps": fee_bps,
        "relayProvider": relay.name,
    }
    return lifecycle.order_transition(
        order,
        from_statuses=[Status.QUOTING_AFTER_DEPOSIT],
        to_status=Status.SENDING_TOKEN_FROM_VAULT,
        reason=f"{received} received, {deliver} to deliver",
        actor=actor,
        settlement=settlement,
    )


def _sweep_covers(order: Order, tx: OutboxTx) -> bool:
    return sweep_covers(
        tx,
        counted=_received(order),
        subject=owner_of(OwnerKind.ORDER, order.pk),
        what=f"order {order.pk} ({order.status})",
    )


def _paid_by_card(order: Order) -> bool:
    return (
        bool(order.vendor_b_payment_intent_id)
        and order.deposit_txs.filter(tx_hash=order.vendor_b_payment_intent_id, counted=True).exists()
    )


def _fronted(provider, order: Order) -> bool:
    """Whether the order is delivered now, beside its sweep: by the devnet solver, which always fronts, or, with
    the relay provider, from the solver's inventory where it covers the order (orders.inventory)."""
    if provider.fronts(order):
        return True
    return isinstance(provider, RelayProvider) and (
        inventory_front(order, int((order.settlement or {}).get("dstAmount") or 0)) is not None
    )


def _send_to_vault(order: Order, actor: str) -> bool:
    if _paid_by_card(order):
        return lifecycle.order_transition(
            order,
            from_statuses=[Status.SENDING_TOKEN_FROM_VAULT],
            to_status=Status.RELAY,
            reason="paid by card: the vault fronts the USDC",
            actor=actor,
        )
    tx = order_sweep(order)
    if tx.status == OutboxTx.Status.FAILED:
        return _fail(order, f"SWEEP_FAILED: {tx.error}", actor)
    provider = get_relay_provider()
    if tx.status == OutboxTx.Status.MINED:
        if not _sweep_covers(order, tx):
            return False
        _fronted(
            provider, order
        )  # the solver's inventory, where it covers the order, is still the faster way
        reason = f"swept into the vault in {tx.tx_hash}"
    elif _fronted(provider, order):
        # The confirmed deposit waits at an address only the service can sweep: the solver delivers now, and
        # the sweep is checked when it is mined (order_tx_finished), as it would be after a reorg.
        reason = "the solver delivers beside the sweep"
    elif _swept_in_block(order, tx):
        # The sweep is in a block and moved what was counted: the vault pays the provider now, not a block
        # later. Whatever the vault sends next has a higher nonce, so no reorg can put it before the sweep,
        # which only the service can send; the sweep is checked again when confirmed (order_tx_finished).
        reason = f"the sweep {tx.tx_hash} is in a block: the vault pays from what it moved"
    else:
        return vault_ahead.pays_ahead(
            order,
            tx,
            _received(order),
            lambda: lifecycle.order_transition(
                order,
                from_statuses=[Status.SENDING_TOKEN_FROM_VAULT],
                to_status=Status.RELAY,
                reason=f"the sweep {tx.tx_hash} is out at the vault's nonce {tx.nonce}: the vault pays after it",
                actor=actor,
            ),
        )
    return lifecycle.order_transition(
        order,
        from_statuses=[Status.SENDING_TOKEN_FROM_VAULT],
        to_status=Status.RELAY,
        reason=reason,
        actor=actor,
    )


def _swept_in_block(order: Order, tx: OutboxTx) -> bool:
    """Whether the order's sweep is in a block, successful, and moved at least what the order counted (one
    that moved less waits for its confirmation, where staff are told)."""
    moved = swept_in_block(tx)
    return moved is not None and moved >= _received(order)


def _dst_amount(order: Order) -> int:
    return int((order.settlement or {})["dstAmount"])


def _relay(order: Order, actor: str) -> bool:
    provider = get_relay_provider()
    delivery = provider.deliver(order, _dst_amount(order))
    if delivery.state == PENDING:
        return False
    if delivery.state != FAILED and not delivery.ours and order.type not in lifecycle.CALLS_CONTRACT:
        # The provider's word is counted once the destination chain shows its fill (a contract order's fill is
        # read in _execute); until then the order waits, and a fill that reverted fails it.
        for chain, tx_hash, _ in delivery.txs:
            receipt = receipt_on(chain, tx_hash)
            if receipt is None:
                return False
            if receipt["status"] != 1:
                return _fail(order, f"RELAY_FAILED: the relay provider's fill {tx_hash} reverted", actor)
        if not delivery.txs:
            return False
    lifecycle.order_record_relay_txs(order=order, txs=list(delivery.txs))
    if delivery.state == FAILED:
        # The solver's own call from inventory (orders/router.py) that would revert, or did, is the call's
        # failure, as the provider's fill that reverts is on the other path.
        ours_call = delivery.ours and order.type in lifecycle.CALLS_CONTRACT
        return _fail(
            order, f"{'EXECUTION_REVERTED' if ours_call else 'RELAY_FAILED'}: {delivery.error}", actor
        )
    if order.type in lifecycle.CALLS_CONTRACT:
        return lifecycle.order_transition(
            order,
            from_statuses=[Status.RELAY],
            to_status=Status.EXECUTING,
            reason="delivered to the destination chain",
            actor=actor,
        )
    return lifecycle.order_mark_executed(order=order, actual_dst_amount=str(_dst_amount(order)), actor=actor)


def _execute(order: Order, actor: str) -> bool:
    provider = get_relay_provider()
    if provider.executes_calls:  # the provider's fill made the call: that fill is the order's execution
        fill = order.relay_txs.filter(status=RelayTx.Status.SUCCESS).order_by("created_at", "pk").first()
        if fill is None:
            return _fail(order, "EXECUTION_INVALID: the relay provider reported no fill with the call", actor)
        receipt = receipt_on(
            fill.chain, fill.tx_hash
        )  # what the provider says is counted once the chain shows it
        if receipt is None:
            return False  # not on the chain (yet): asked again on the next poll; stuck orders are listed
        if receipt["status"] != 1:
            return _fail(
                order, f"EXECUTION_REVERTED: the relay provider's fill {fill.tx_hash} reverted", actor
            )
        execute_tx = {
            "chainId": fill.chain,
            "txHash": fill.tx_hash,
            "blockNumber": receipt["blockNumber"],
            "status": "success",
        }
        return lifecycle.order_mark_executed(order=order, execute_tx=execute_tx, actor=actor)
    try:
        tx = provider.execute(order, _dst_amount(order))
    except ExecutionInvalid as exc:
        return _fail(order, f"EXECUTION_INVALID: {exc}", actor)
    if tx.in_flight:
        return False
    if tx.status == OutboxTx.Status.FAILED:
        return _fail(order, f"EXECUTION_REVERTED: {tx.error}", actor)
    execute_tx = {
        "chainId": tx.chain_id,
        "txHash": tx.tx_hash,
        "blockNumber": tx.block_number,
        "status": "success",
    }
    return lifecycle.order_mark_executed(order=order, execute_tx=execute_tx, actor=actor)


def _expired(order: Order, actor: str) -> bool:
    """An expired order that received a deposit gives it back."""
    if not order.deposit_txs.exists():
        return False
    return lifecycle.order_transition(
        order,
        from_statuses=[Status.EXPIRED],
        to_status=Status.REFUNDING,
        reason="a deposit arrived after the order expired",
        actor=actor,
    )


def _refunding(order: Order, actor: str) -> bool:
    if _provider_refund_pending(order):
        return False
    refunds = refund_deposits(order)
    if refunds is None:
        return False
    return lifecycle.order_refunded(
        order=order, refund_tx_hash=refunds[-1].tx_hash if refunds else None, actor=actor
    )


def _provider_refund_pending(order: Order) -> bool:
    """The relay provider is giving the order's deposit back to the vault: the payer is refunded once that
    refund is on its chain, confirmed, so the vault never fronts it with other orders' money (two refunds of a
    rehearsal reverted, the vault's balance short in their block). A refund that reverted is not waited for."""
    for refund in order.relay_txs.filter(status=RelayTx.Status.REFUND):
        if confirmed_receipt(refund.chain, refund.tx_hash) is None:
            return True
    return False


# What runs in each status: the functions the declared machine names (orders.states, the `step` column).
STEPS: dict[str, Callable[[Order, str], bool]] = {
    Status.QUOTING_AFTER_DEPOSIT: _quote,
    Status.SENDING_TOKEN_FROM_VAULT: _send_to_vault,
    Status.RELAY: _relay,
    Status.EXECUTING: _execute,
    Status.EXPIRED: _expired,
    Status.REFUNDING: _refunding,
}
_named = {status: state.step for status, state in states.MACHINE.items() if state.step}
if {status: step.__name__ for status, step in STEPS.items()} != _named:  # the table and the code, one list
    raise ImportError(f"orders.settlement.STEPS is not the steps orders.states names: {_named}")


def enqueue_settlement(order_id: uuid.UUID | str) -> None:
    """Settle the order in a worker once the current transaction commits (in this one, when it is a worker of
    the settlement queue handing the order's deposit over: chains.handlers.follow_up)."""
    if follow_up(lambda: _settle_here(str(order_id))):
        return
    transaction.on_commit(lambda: SETTLE_ORDER_TASK.delay(str(order_id)))


@outbox_handler(OwnerKind.ORDER)
def order_tx_finished(tx: OutboxTx) -> None:
    """One of an order's transactions was mined or failed; settle the order on.

    A sweep mined again after the order moved on (it had left the chain in a
    reorg and was sent again) is checked here: the settlement no longer looks.
    """
    key = tx.parsed_key
    order_id = key.id
    if key.is_(Step.SWEEP, detail=False) and tx.status in (OutboxTx.Status.MINED, OutboxTx.Status.FAILED):
        order = Order.objects.filter(pk=order_id).first()
        if order is not None and order.status not in (Status.SENDING_TOKEN_FROM_VAULT, Status.REFUNDING):
            _swept_after_moving_on(order, tx)
        elif order is not None and tx.status == OutboxTx.Status.MINED and _sweep_covers(order, tx):
            inventory_swept(order)
    if key.is_(Step.RELAY, detail=True):
        fast_fills.deposit_finished(tx)  # the vault's deposit to the provider: a fast fill's hold settles
    if key.is_(Step.RELAY, detail=False) and InventoryFront.objects.filter(tx=tx).exists():
        # The solver's delivery from inventory: its order is finished by the process that read the receipt, as
        # soon as this commits, not from the back of the settlement queue (in a burst, seconds behind); one
        # made on first sight of the payment settles its order first (orders.fronting).
        if tx.status == OutboxTx.Status.MINED:
            fronting.paid_on_sight(tx)
        transaction.on_commit(lambda: _settle_here(order_id))
        return
    enqueue_settlement(order_id)


@outbox_included_handler(OwnerKind.ORDER)
def order_tx_included(tx: OutboxTx) -> None:
    """One of an order's transactions is in a block: a sweep the order waits for moves it on now (the vault
    pays the relay provider a block sooner, `_send_to_vault`), and so does the solver's delivery from
    inventory; nothing else waits for less than its outcome."""
    key = tx.parsed_key
    if (
        key.is_(Step.SWEEP, detail=False)
        and Order.objects.filter(pk=key.id, status=Status.SENDING_TOKEN_FROM_VAULT).exists()
    ):
        enqueue_settlement(key.id)
    elif (
        key.is_(Step.RELAY, detail=False)
        and InventoryFront.objects.filter(tx=tx).exists()
        and (fronting.paid_on_sight(tx) or Order.objects.filter(pk=key.id, status=Status.RELAY).exists())
    ):
        # The solver's delivery is in a block: its order is executed here, now (orders.relays: a delivery from
        # inventory counts once in a block and successful), not when the delivery has its confirmations; a
        # delivery made on first sight of the payment settles its order first (orders.fronting).
        _settle_here(key.id)


@outbox_broadcast_handler(OwnerKind.ORDER)
def order_tx_broadcast(tx: OutboxTx) -> None:
    """An order's sweep is out: its order is settled now, as the vault may pay the provider ahead of the
    sweep's block (orders.vault_ahead). The vault's deposit to the provider is out: the provider is asked to
    fill now (RELAY_FAST_FILL, orders/fast_fills.py) by the process that broadcast it, not when the order is
    settled next (a relay poll later, or once the deposit is mined, when a fast fill buys nothing)."""
    key = tx.parsed_key
    if key.is_(Step.SWEEP, detail=False):  # the vault may pay ahead of its sweep's block (orders.vault_ahead)
        if Order.objects.filter(pk=key.id, status=Status.SENDING_TOKEN_FROM_VAULT).exists():
            enqueue_settlement(key.id)
        return
    if not settings.RELAY_FAST_FILL or not key.is_(Step.RELAY, detail=True):
        return
    provider = get_relay_provider()
    order = Order.objects.filter(pk=key.id, status=Status.RELAY).first()
    if order is None or not isinstance(provider, RelayProvider) or not (order.settlement or {}).get("relay"):
        return
    fast_fills.follow(provider, order, OutboxTx.objects.get(pk=tx.pk), is_deposit=True)


def _settle_here(order_id: str) -> None:
    try:
        settle_order(order_id)
    except Exception:  # the settlement queue takes it: nothing is lost
        logger.exception("Order %s: settling after its delivery failed here; the queue takes it", order_id)
        enqueue_settlement(order_id)


@outbox_handler(OwnerKind.RELAY)
def relay_allowance_finished(tx: OutboxTx) -> None:
    """The vault's standing allowance for the relay provider's depository was mined (or failed): the orders
    waiting for it to pay their deposit on that chain move on (or fail, and the next asks again)."""
    waiting = Order.objects.filter(status=Status.RELAY, src_chain=tx.chain_id).order_by("status_changed_at")
    for order_id in waiting.values_list("pk", flat=True)[:200]:
        enqueue_settlement(order_id)


def _swept_after_moving_on(order: Order, tx: OutboxTx) -> None:
    """The sweep of an order that already moved on (the solver delivered beside it, or it was sent again after a
    reorg) finished: what it moved is checked; a sweep that failed leaves the deposit at its address, which
    staff are told of (the order's money is not lost: only the service can sweep that address)."""
    if tx.status == OutboxTx.Status.MINED:
        if _sweep_covers(order, tx):
            inventory_swept(order)  # what the solver fronted is in the vault: no longer outstanding
        return
    incident_record(
        kind=Incident.Kind.SWEEP_SHORT,
        subject=owner_of(OwnerKind.ORDER, order.pk),
        chain_id=tx.chain_id,
        summary=f"the sweep of order {order.pk} ({order.status}) failed after the order moved on: {tx.error}"[
            :500
        ],
        details={"tx_key": tx.key, "tx_hash": tx.tx_hash, "error": tx.error[:500]},
    )


def orders_stuck(*, now=None):
    """Orders holding money that have not moved for SETTLEMENT_STUCK_SECONDS: in a settlement state, or
    whatever their status (expired, failed, even executed) with a deposit still owed back to its payer (a
    late payment, a surplus, part of a price that expired) and no refund of it made."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.SETTLEMENT_STUCK_SECONDS)
    refunded = RefundTx.objects.filter(deposit=OuterRef("pk"), status=RefundTx.Status.SUCCESS)
    owed = (
        DepositTx.objects.filter(withdrawn_at__isnull=True, created_at__lte=cutoff)
        .filter(
            Q(refund_amount__isnull=False)
            | Q(counted=True, order__status__in=(Status.EXPIRED, Status.FAILURE))
        )
        .exclude(Exists(refunded))
        .values("order_id")
    )
    return Order.objects.filter(
        Q(status__in=SETTLING, status_changed_at__lte=cutoff) | Q(pk__in=owed)
    ).order_by("status_changed_at")


def settle_stuck_orders(*, limit: int = 200) -> int:
    """Log each stuck order at WARNING and drive it again (a lost task, a provider that was down); an order
    that an open incident holds waits for staff instead (it is listed, not logged every minute)."""
    held = set(
        Incident.objects.filter(resolved_at__isnull=True, subject__startswith="order:").values_list(
            "subject", flat=True
        )
    )
    stuck = [order for order in orders_stuck()[:limit] if owner_of(OwnerKind.ORDER, order.pk) not in held]
    for order in stuck:
        logger.warning(
            "Order %s has been %s since %s: settling it again",
            order.pk,
            order.status,
            order.status_changed_at.isoformat(),
        )
        settle_order(order.pk)
    return len(stuck)


def relays_poll(*, limit: int = 500) -> int:
    """Orders waiting for the relay provider's fill are driven again (RELAY_POLL_SECONDS, by beat): the provider
    tells nothing by itself, and its status is asked only when the order is driven. How many were."""
    waiting = list(
        Order.objects.filter(
            Q(status=Status.RELAY)
            | Q(status=Status.REFUNDING, relay_txs__status=RelayTx.Status.REFUND)  # its provider refund
        )
        .distinct()
        .order_by("status_changed_at")
        .values_list("pk", flat=True)[:limit]
    )
    for order_id in waiting:
        enqueue_settlement(order_id)
    relay_refunds_post()
    return len(waiting)


def relay_refunds_post(*, within: timedelta = timedelta(days=2), limit: int = 200) -> int:
    """The relay provider's refunds into the vault (its fill failed), in the ledger once their chain shows them
    `confirmations` deep: they are not the outbox's, nor to a watched address, so nothing else sees them. How
    many were posted; a refund that is not on its chain yet is asked again on the next poll."""
    posted = 0
    recent = list(
        RelayTx.objects.filter(status=RelayTx.Status.REFUND, created_at__gte=timezone.now() - within)
        .select_related("order")
        .order_by("created_at")[:limit]
    )
    keys = {accounting.relay_refund_key(r.chain, r.tx_hash) for r in recent}
    done = set(Posting.objects.filter(key__in=keys).values_list("key", flat=True))  # its unique index
    for refund in recent:
        if accounting.relay_refund_key(refund.chain, refund.tx_hash) in done:
            continue
        receipt = confirmed_receipt(refund.chain, refund.tx_hash)
        if receipt is not None and receipt["status"] == 1:
            with transaction.atomic():
                posted += accounting.relay_refund_posted(
                    refund.order, chain_id=refund.chain, tx_hash=refund.tx_hash, receipt=receipt
                )
    return posted


def settle_in_flight(*, limit: int = 1000) -> int:
    """Drive every order in a settlement state, whatever its age; how many were driven. A worker runs this when it starts, so that what a killed worker was doing goes on
    within seconds. Each is safe to drive again (business keys, conditional transitions)."""
    orders = list(
        Order.objects.filter(status__in=SETTLING)
        .order_by("status_changed_at")
        .values_list("pk", flat=True)[:limit]
    )
    for order_id in orders:
        settle_order(order_id)
    if orders:
        logger.info("Resumed %s order(s) in flight", len(orders))
    return len(orders)
