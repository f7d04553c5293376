"""Money back: every refund an order owes, each under a business key that always stands for the same amount,
paid from the vault to the deposit's sender (or to the order's refund address) once the deposit address was
swept; a card payment is refunded by its vendor. `refund_deposits` is asked by settlement
(orders/settlement.py) whatever the order's state.

The mechanics are the collection kernel's (chains.collection): the attempts of a transfer back and the
incident about a deposit held for want of a sender. The order's own rules are here: which keys it owes
(`_owed`), a card payment refunded by its vendor, staff's address for a sender the chain did not name
(`refund_target`), and that an uncounted deposit is paid back only once its sweep reached the vault."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Q

from chains.collection import attempt, hold_unattributed, transfer_back
from chains.incidents import incident_record
from chains.keys import OwnerKind, Step, outbox_key, owner_of
from chains.models import Incident, OutboxTx
from chains.outbox import swept_of
from core.errors import DomainError
from orders import events, lifecycle
from orders.accounting import card_refund_posted
from orders.models import DepositTx, Order, RefundTx
from orders.onramps import get_onramp_adapter
from orders.selectors import refund_target
from orders.sweeps import order_address, order_sweep

logger = logging.getLogger("orders.settlement")  # refunds are settlement's news

Status = Order.Status


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
            owed.append((deposit, flagged, outbox_key(OwnerKind.ORDER, order.pk, Step.REFUND, deposit.pk)))
        rest = int(deposit.amount) - flagged
        if refunding and rest > 0:
            owed.append(
                (
                    deposit,
                    rest,
                    outbox_key(
                        OwnerKind.ORDER, order.pk, Step.REFUND, deposit.pk, *(["rest"] if flagged else [])
                    ),
                )
            )
    return owed


def _refund(order: Order, deposit: DepositTx, amount: int, key: str) -> OutboxTx:
    """The latest attempt of one refund (chains.collection.attempt: a failed one is tried again later under
    the next attempt's key, a bounded number of times)."""
    back = transfer_back(
        chain_id=deposit.chain,
        token=deposit.token_address or order.src_token_address,
        to=refund_target(order, deposit),
        amount=amount,
    )
    return attempt(key, back)


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
    keys = [
        outbox_key(OwnerKind.ORDER, order.pk, Step.SWEEP),
        *(outbox_key(OwnerKind.ORDER, order.pk, Step.SWEEP, d.pk) for d in same),
    ]
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
        subject=owner_of(OwnerKind.ORDER, order.pk),
        chain_id=order.src_chain,
        summary=f"order {order.pk}: its sweeps of {token} moved {total} of the {owed} its deposits brought; the "
        f"refund of deposit {deposit.pk} is not paid out of the vault's own funds until staff resolve this",
        details={"deposit": deposit.pk, "sweep": sweep.key, "swept": str(total), "deposits": str(owed)},
    )
    return False


def refund_deposits(order: Order) -> list[RefundTx] | None:
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
            hold_unattributed(
                order_address(order),
                deposit.pk,
                deposit.chain,
                deposit.token_address or order.src_token_address,
                amount,
                why="its sender is unknown (a contract's internal payment) and the order named no refundAddress",
                remedy="held until staff enter an address (admin, unattributed deposits)",
            )
            return None
        sweep = order_sweep(order, None if deposit.counted else deposit)
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
            with transaction.atomic():
                refund, created = lifecycle.order_record_refund_tx(
                    order=order,
                    deposit=deposit,
                    tx_hash=tx.tx_hash,
                    chain=tx.chain_id,
                    amount=amount,
                    succeeded=succeeded,
                )
                if created and succeeded:
                    events.announce(events.RefundPaid(order, refund))
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
    with transaction.atomic():
        refund, created = lifecycle.order_record_refund_tx(
            order=order,
            deposit=deposit,
            tx_hash=refund_id,
            chain=deposit.chain,
            amount=amount,
            succeeded=True,
        )
        if created:
            card_refund_posted(order, refund)
            events.announce(events.RefundPaid(order, refund))
    return refund
