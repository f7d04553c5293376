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
from django.db.models import Q
from django.utils import timezone

from chains.handlers import outbox_handler
from chains.incidents import incident_open_for, incident_record
from chains.models import Deposit, Incident, OutboxTx
from chains.outbox import outbox_sweep, outbox_transfer, sweep_covers, swept_of
from core.errors import DomainError
from orders import lifecycle
from orders.fees import fee_amount
from orders.models import DepositTx, Order, RefundTx, RelayTx
from orders.onramps import get_onramp_adapter
from orders.providers import ProviderUnavailable, QuoteRejected
from orders.relays import (
    FAILED,
    PENDING,
    SWAP_TYPES,
    DevnetSolver,
    ExecutionInvalid,
    get_relay_provider,
    order_price,
)

logger = logging.getLogger(__name__)

Status = Order.Status
EXPECTED_DST_TYPES = SWAP_TYPES | {"custom_exact_in"}  # the payer names what must arrive at least
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
        _refund_deposits(order)  # what the order did not count, or the surplus over its price
    for waiting in DevnetSolver.release(order):
        enqueue_settlement(waiting)  # the solver's allowance for their contract may be free now
    return order.status


def order_held(order: Order) -> bool:
    """Whether the order's settlement waits: a deposit in doubt after a reorg, or an open incident about it."""
    if incident_open_for(f"order:{order.pk}"):
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
    """Price what arrived; refuse what falls short of the payer's expectation (SLIPPAGE)."""
    relay = get_relay_provider()
    problem = relay.check(order)
    if problem:
        return _fail(order, f"RELAY_UNAVAILABLE: {problem}", actor)
    received = _received(order)
    if lifecycle.has_fixed_price(order):
        received = min(received, int(order.src_amount))  # the surplus goes back
    try:
        quoted = relay.price(order, received)
    except QuoteRejected as exc:
        return _fail(order, f"NO_ROUTE: {exc}", actor)
    except ProviderUnavailable as exc:
        logger.warning("Order %s: pricing unavailable, retried later: %s", order.pk, exc)
        return False
    fee_bps = int((order.fee or {}).get("finalFeeBps") or 0)
    after_fee = quoted - fee_amount(quoted, fee_bps)
    if order.type in EXPECTED_DST_TYPES:
        minimum, deliver = int(order.payload.get("expectedDstAmount") or 0), after_fee
    else:
        minimum = deliver = order_price(order)
    tolerance = settings.SETTLEMENT_SLIPPAGE_BPS
    if after_fee * 10_000 < minimum * (10_000 - tolerance):
        return _fail(
            order,
            f"SLIPPAGE: {received} received buys {after_fee} after fees, below {minimum} less {tolerance} bps",
            actor,
        )
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


def _sweep(order: Order, deposit: DepositTx | None = None) -> OutboxTx:
    """The factory moves what the order's deposit address holds of a token into the vault.

    The order's own token is swept once for settlement (and for the refunds of
    what it counted); a deposit it did not count gets a sweep of its own, since
    it may arrive after the order's sweep.
    """
    token = order.src_token_address if deposit is None else deposit.token_address or order.src_token_address
    key = f"order:{order.pk}:sweep" if deposit is None else f"order:{order.pk}:sweep:{deposit.pk}"
    return outbox_sweep(
        key=key, chain_id=order.src_chain, kind="order", identifier=str(order.pk), token=token
    )


def _sweep_covers(order: Order, tx: OutboxTx) -> bool:
    return sweep_covers(
        tx, counted=_received(order), subject=f"order:{order.pk}", what=f"order {order.pk} ({order.status})"
    )


def _paid_by_card(order: Order) -> bool:
    return (
        bool(order.vendor_b_payment_intent_id)
        and order.deposit_txs.filter(tx_hash=order.vendor_b_payment_intent_id, counted=True).exists()
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
    tx = _sweep(order)
    if tx.status == OutboxTx.Status.FAILED:
        return _fail(order, f"SWEEP_FAILED: {tx.error}", actor)
    if tx.status != OutboxTx.Status.MINED or not _sweep_covers(order, tx):
        return False
    return lifecycle.order_transition(
        order,
        from_statuses=[Status.SENDING_TOKEN_FROM_VAULT],
        to_status=Status.RELAY,
        reason=f"swept into the vault in {tx.tx_hash}",
        actor=actor,
    )


def _dst_amount(order: Order) -> int:
    return int((order.settlement or {})["dstAmount"])


def _relay(order: Order, actor: str) -> bool:
    delivery = get_relay_provider().deliver(order, _dst_amount(order))
    if delivery.state == PENDING:
        return False
    for chain, tx_hash, status in delivery.txs:
        RelayTx.objects.get_or_create(
            order=order, tx_hash=tx_hash, defaults={"chain": chain, "status": status}
        )
    if delivery.state == FAILED:
        return _fail(order, f"RELAY_FAILED: {delivery.error}", actor)
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
    try:
        tx = get_relay_provider().execute(order, _dst_amount(order))
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
    refunds = _refund_deposits(order)
    if refunds is None:
        return False
    return lifecycle.order_refunded(
        order=order, refund_tx_hash=refunds[-1].tx_hash if refunds else None, actor=actor
    )


def _owed(order: Order) -> list[tuple[DepositTx, int, str]]:
    """(deposit, amount, business key) of every refund the order owes now.

    Each key always stands for the same amount: a deposit's flagged part
    (refund_amount) under `refund:<deposit>`, and, once the order is refunding,
    the rest of it under `refund:<deposit>:rest`. So a flagged refund in flight
    when the order fails is never paid a second time.
    """
    refunding = order.status in (Status.REFUNDING, Status.REFUNDED)
    owed = []
    for deposit in order.deposit_txs.filter(Q(refund_amount__isnull=False) | Q(counted=True)):
        flagged = int(deposit.refund_amount or 0)
        if flagged:
            owed.append((deposit, flagged, f"order:{order.pk}:refund:{deposit.pk}"))
        rest = int(deposit.amount) - flagged
        if refunding and rest > 0:
            owed.append(
                (deposit, rest, f"order:{order.pk}:refund:{deposit.pk}" + (":rest" if flagged else ""))
            )
    return owed


def refund_target(order: Order, deposit: DepositTx) -> str:
    """Where a deposit's refund goes: its sender; for a deposit seen by balance (a contract wallet's internal
    payment, no sender known), the order's refundAddress, else the address staff entered; '' when none."""
    return deposit.from_address or order.refund_address or deposit.refund_to or ""


def _hold_unattributed(order: Order, deposit: DepositTx, amount: int) -> None:
    """A refund with nowhere to go: held, listed in the admin ("unattributed deposits"), staff told once."""
    incident_record(
        kind=Incident.Kind.UNATTRIBUTED,
        subject=f"order-deposit:{deposit.pk}",
        chain_id=deposit.chain,
        summary=f"order {order.pk}: {amount} of {deposit.token_address or order.src_token_address} must be refunded, "
        "but its sender is unknown (a contract's internal payment) and the order named no refundAddress: "
        "held until staff enter an address (admin, unattributed deposits)",
        details={"order": str(order.pk), "deposit": deposit.pk, "amount": str(amount)},
    )


def _refund(order: Order, deposit: DepositTx, amount: int, key: str) -> OutboxTx:
    """The latest attempt of one refund, asked for if none is under way.

    A failed attempt moved nothing (it reverted, or would have and was never
    sent: the vault short of funds a relay has not returned yet, say), so after
    REFUND_RETRY_SECONDS it is tried again under the next attempt's key, at
    most REFUND_MAX_ATTEMPTS times; then it waits for staff.
    """
    keys = [key, *(f"{key}:attempt{n}" for n in range(2, settings.REFUND_MAX_ATTEMPTS + 1))]
    attempts = list(OutboxTx.objects.filter(key__in=keys).order_by("created_at"))  # the unique index
    latest = attempts[-1] if attempts else None
    if latest is not None:
        retry_after = timezone.now() - timedelta(seconds=settings.REFUND_RETRY_SECONDS)
        if latest.status != OutboxTx.Status.FAILED or len(attempts) >= settings.REFUND_MAX_ATTEMPTS:
            return latest
        if latest.finished_at and latest.finished_at > retry_after:
            return latest
        key = f"{key}:attempt{len(attempts) + 1}"
    return outbox_transfer(
        key=key,
        chain_id=deposit.chain,
        signer="vault",
        amount=amount,
        token=deposit.token_address or order.src_token_address,
        to=refund_target(order, deposit),
    )


def _uncounted_swept(order: Order, deposit: DepositTx, sweep: OutboxTx) -> bool:
    """Whether the order's sweeps moved into the vault at least every deposit of this deposit's token up to it
    (by arrival): what a refund of it pays back must have arrived. If not (its transfer left the chain, or the
    database outlived a devnet), staff are told and the order waits (a sweep_short incident holds it)."""
    token = deposit.token_address or order.src_token_address
    same = [
        d
        for d in order.deposit_txs.filter(
            pk__lte=deposit.pk, withdrawn_at__isnull=True, deposit__isnull=False
        )
        if (d.token_address or order.src_token_address).lower() == token.lower()
    ]
    keys = [f"order:{order.pk}:sweep", *(f"order:{order.pk}:sweep:{d.pk}" for d in same)]
    swept = [
        swept_of(tx, token) for tx in OutboxTx.objects.filter(key__in=keys, status=OutboxTx.Status.MINED)
    ]
    if any(amount is None for amount in swept):
        return True  # a sweep from before the receipts' logs were kept: nothing to compare with
    total, owed = sum(amount or 0 for amount in swept), sum(int(d.amount) for d in same)
    if total >= owed:
        return True
    incident_record(
        kind=Incident.Kind.SWEEP_SHORT,
        subject=f"order:{order.pk}",
        chain_id=order.src_chain,
        summary=f"order {order.pk}: its sweeps of {token} moved {total} of the {owed} its deposits brought; the "
        f"refund of deposit {deposit.pk} is not paid out of the vault's own funds until staff resolve this",
        details={"deposit": deposit.pk, "sweep": sweep.key, "swept": str(total), "deposits": str(owed)},
    )
    return False


def _refund_deposits(order: Order) -> list[RefundTx] | None:
    """Send every refund the order owes; their RefundTx records once all succeeded, else None (not yet)."""
    done: list[RefundTx] = []
    for deposit, amount, key in _owed(order):
        if lifecycle.is_card_deposit(deposit):
            refund = _refund_card(order, deposit, amount)
            if refund is None:
                return None
            done.append(refund)
            continue
        if not refund_target(order, deposit):
            _hold_unattributed(order, deposit, amount)
            return None
        sweep = _sweep(order, None if deposit.counted else deposit)
        if sweep.status != OutboxTx.Status.MINED:
            if sweep.status == OutboxTx.Status.FAILED:
                logger.error("Order %s: the sweep %s failed, %s cannot be refunded", order.pk, sweep.key, key)
            return None
        if not deposit.counted and not _uncounted_swept(order, deposit, sweep):
            return None  # the vault did not get it: nothing is paid out of its own funds
        tx = _refund(order, deposit, amount, key)
        if tx.in_flight:
            return None
        succeeded = tx.status == OutboxTx.Status.MINED
        refund = None
        if tx.tx_hash:  # an attempt that reached the chain, whatever its outcome, is shown
            refund, _ = RefundTx.objects.get_or_create(
                order=order,
                deposit=deposit,
                tx_hash=tx.tx_hash,
                defaults={
                    "chain": tx.chain_id,
                    "amount": amount,
                    "status": RefundTx.Status.SUCCESS if succeeded else RefundTx.Status.FAILURE,
                },
            )
        if refund is None or not succeeded:
            logger.error(
                "Order %s: refund %s failed (%s); it is tried again later", order.pk, tx.key, tx.error
            )
            return None
        done.append(refund)
    return done


def _refund_card(order: Order, deposit: DepositTx, amount: int) -> RefundTx | None:
    """A card payment goes back to the card, through its vendor (idempotent per order there)."""
    existing = order.refund_txs.filter(deposit=deposit, status=RefundTx.Status.SUCCESS).first()
    if existing is not None:
        return existing
    try:
        refund_id = get_onramp_adapter().refund_card(
            payment_intent_id=deposit.tx_hash, order_id=str(order.pk)
        )
    except DomainError as exc:
        logger.warning(
            "Order %s: the card refund of %s failed, tried again later: %s", order.pk, deposit.tx_hash, exc
        )
        return None
    refund, _ = RefundTx.objects.get_or_create(
        order=order,
        deposit=deposit,
        tx_hash=refund_id,
        defaults={"chain": deposit.chain, "amount": amount, "status": RefundTx.Status.SUCCESS},
    )
    return refund


STEPS: dict[str, Callable[[Order, str], bool]] = {
    Status.QUOTING_AFTER_DEPOSIT: _quote,
    Status.SENDING_TOKEN_FROM_VAULT: _send_to_vault,
    Status.RELAY: _relay,
    Status.EXECUTING: _execute,
    Status.EXPIRED: _expired,
    Status.REFUNDING: _refunding,
}


def enqueue_settlement(order_id: uuid.UUID | str) -> None:
    """Settle the order in a worker once the current transaction commits."""
    from orders.tasks import settle_order_task

    transaction.on_commit(lambda: settle_order_task.delay(str(order_id)))


@outbox_handler("order")
def order_tx_finished(tx: OutboxTx) -> None:
    """One of an order's transactions was mined or failed; settle the order on.

    A sweep mined again after the order moved on (it had left the chain in a
    reorg and was sent again) is checked here: the settlement no longer looks.
    """
    order_id, _, what = tx.key.split(":", 1)[1].partition(":")
    if what == "sweep" and tx.status == OutboxTx.Status.MINED:
        order = Order.objects.filter(pk=order_id).first()
        if order is not None and order.status not in (Status.SENDING_TOKEN_FROM_VAULT, Status.REFUNDING):
            _sweep_covers(order, tx)
    enqueue_settlement(order_id)


def orders_stuck(*, now=None):
    """Orders in a settlement state that have not moved for SETTLEMENT_STUCK_SECONDS."""
    now = now or timezone.now()
    return Order.objects.filter(
        status__in=SETTLING, status_changed_at__lte=now - timedelta(seconds=settings.SETTLEMENT_STUCK_SECONDS)
    ).order_by("status_changed_at")


def settle_stuck_orders(*, limit: int = 200) -> int:
    """Log each stuck order at WARNING and drive it again (a lost task, a provider that was down); an order
    that an open incident holds waits for staff instead (it is listed, not logged every minute)."""
    held = set(
        Incident.objects.filter(resolved_at__isnull=True, subject__startswith="order:").values_list(
            "subject", flat=True
        )
    )
    stuck = [order for order in orders_stuck()[:limit] if f"order:{order.pk}" not in held]
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
        Order.objects.filter(status=Status.RELAY)
        .order_by("status_changed_at")
        .values_list("pk", flat=True)[:limit]
    )
    for order_id in waiting:
        enqueue_settlement(order_id)
    return len(waiting)


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
