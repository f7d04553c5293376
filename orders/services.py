"""Every write of the order interface: checkout sessions, orders and their lifecycle."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from chains.incidents import incident_record
from chains.models import Incident, OutboxTx
from chains.readers import ChainUnavailable, get_chain_reader
from chains.registry import deposit_address
from chains.tokens import amount_usd, check_amount_worth, token_get, tokens_by_chain_and_address
from chains.watcher import watch_address
from core.errors import Conflict, InvalidRequest
from orders import fees
from orders.models import CheckoutSession, DepositTx, Order, OrderStatusChange
from orders.onramps import get_onramp_adapter
from orders.providers import token_shape
from orders.representations import session_event_data
from platform_api.models import Organization, PlatformCheckoutSession
from webhooks.events import emit_event
from webhooks.events import payment_event_data as webhook_payment_data

logger = logging.getLogger(__name__)

# --- checkout sessions ----------------------------------------------------------


def checkout_session_create(
    *,
    organization: Organization | None,
    success_url: str | None = None,
    cancel_url: str | None = None,
    metadata: dict | None = None,
    client_reference_id: str | None = None,
    expires_in: int = 1800,
) -> CheckoutSession:
    now = timezone.now()
    return CheckoutSession.objects.create(
        organization=organization,
        success_url=success_url,
        cancel_url=cancel_url,
        metadata=metadata or {},
        client_reference_id=client_reference_id or None,
        created_at=now,
        expires_at=now + timedelta(seconds=expires_in),
    )


def _session_transition(session_id, *, from_status: str | tuple[str, ...], to_status: str, **fields) -> bool:
    """Move a session between states with one conditional update; False if it was not in `from_status`."""
    statuses = (from_status,) if isinstance(from_status, str) else from_status
    return (
        CheckoutSession.objects.filter(pk=session_id, status__in=statuses).update(status=to_status, **fields)
        == 1
    )


@transaction.atomic
def checkout_session_expire(
    *, session_id: uuid.UUID, reason: str = "expired", from_statuses: tuple[str, ...] = ("open",)
) -> CheckoutSession | None:
    """Expire a session and emit `checkout.expired`; None if it was not in `from_statuses` (or is gone).

    Its order stops too: an order still waiting for its deposit is `expired`,
    so a deposit that arrives later is refunded, never executed. The session's
    row is locked first, as `order_record_deposit` does, so a deposit and the
    expiry never both win.
    """
    if (
        CheckoutSession.objects.select_for_update().filter(pk=session_id, status__in=from_statuses).first()
        is None
    ):
        return None
    _session_transition(session_id, from_status=from_statuses, to_status="expired", expired_at=timezone.now())
    order = Order.objects.filter(checkout_session_id=session_id, status__in=WAITING).first()
    if order is not None:
        order_transition(order, from_statuses=WAITING, to_status=Order.Status.EXPIRED,
                         reason=f"its checkout session expired ({reason})")  # fmt: skip
    session = CheckoutSession.objects.select_related("organization").get(pk=session_id)
    emit_event(
        organization=session.organization,
        event_type="checkout.expired",
        data=session_event_data(session) | {"reason": reason},
    )
    return session


def checkout_sessions_expire_due(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Expire every open session past its `expires_at` (the periodic task and the command call this)."""
    now = now or timezone.now()
    expired = 0
    while True:
        due = list(
            CheckoutSession.objects.filter(status="open", expires_at__lte=now).values_list("pk", flat=True)[
                :batch_size
            ]
        )
        for session_id in due:
            if checkout_session_expire(session_id=session_id, reason="timeout"):
                expired += 1
        if len(due) < batch_size:
            return expired


def _session_mark_processing(order: Order) -> None:
    if order.checkout_session_id:
        _session_transition(order.checkout_session_id, from_status="open", to_status="processing")


def _session_complete(order: Order) -> None:
    if order.checkout_session_id and _session_transition(
        order.checkout_session_id, from_status="processing", to_status="complete", completed_at=timezone.now()
    ):
        session = CheckoutSession.objects.select_related("organization").get(pk=order.checkout_session_id)
        emit_event(
            organization=session.organization,
            event_type="checkout.completed",
            data=session_event_data(session) | {"order_id": str(order.id)},
        )


# --- fees shared by quotes and orders ----------------------------------------------


def recipient_discount_balance(recipient: str | None) -> int:
    """The recipient's discount-token balance; 0 when unknown (no discount rather than no checkout)."""
    if not recipient:
        return 0
    try:
        return get_chain_reader().balance_of(
            chain_id=settings.DISCOUNT_TOKEN_CHAIN_ID, token=settings.DISCOUNT_TOKEN_ADDRESS, holder=recipient
        )
    except ChainUnavailable as exc:
        logger.warning("Discount-token balance unavailable, charging the undiscounted fee: %s", exc)
        return 0


def token_usd_value(*, chain_id: int, address: str, amount: int) -> Decimal:
    token = token_get(chain_id=chain_id, address=address)
    return Decimal(0) if token is None else amount_usd(token, amount)


# --- orders ------------------------------------------------------------------------------


def _onramp_metadata(onramp: dict | None, *, payer_ip: str, fingerprint: dict | None) -> dict | None:
    if not onramp:
        return None
    metadata = {k: v for k, v in onramp.items() if k != "fingerprint"}
    metadata["ipAddress"] = payer_ip
    chosen = onramp.get("fingerprint") or fingerprint
    if chosen:
        metadata["fingerprint"] = dict(chosen)
    return metadata


def _check_session(session: CheckoutSession | None, session_id, organization: Organization | None) -> None:
    if session is None or (organization and session.organization_id not in (None, organization.pk)):
        raise InvalidRequest(f"no checkout session {session_id}.", field="checkoutSessionId")
    if session.status != CheckoutSession.Status.OPEN or session.expires_at <= timezone.now():
        raise InvalidRequest(
            f"checkout session {session.pk} is {session.status}, not open.", field="checkoutSessionId"
        )
    if Order.objects.filter(checkout_session=session).exists():
        raise Conflict(f"checkout session {session.pk} already has an order.", field="checkoutSessionId")


def with_token_shapes(data: dict[str, Any]) -> dict[str, Any]:
    """The order's `metadata` with `srcToken` and `dstToken` (the contract's Token shape) from the registry,
    where the caller (the hosted checkout, a widget) named only the addresses."""
    metadata = dict(data.get("metadata") or {})
    sides = {"srcToken": (data["srcChain"], data["srcTokenAddress"]),
             "dstToken": (data["dstChain"], data["dstTokenAddress"])}  # fmt: skip
    missing = {side: pair for side, pair in sides.items() if side not in metadata}
    if missing:
        found = tokens_by_chain_and_address(list(missing.values()))
        for side, (chain_id, address) in missing.items():
            if (token := found.get((chain_id, address.lower()))) is not None:
                metadata[side] = token_shape(token)
    return metadata


def order_create(
    *,
    organization: Organization | None,
    data: dict[str, Any],
    payer_ip: str,
    fingerprint: dict | None = None,
    platform_session=None,
) -> Order:
    """Create an order with its own deposit address, linked to an open checkout session if one is named.

    Vendor calls (an onramp session token, a card payment intent) happen before
    the database transaction, so no lock is held while a vendor answers; the
    session is checked before them and again under its row lock.
    """
    session_id = data.get("checkoutSessionId")
    if session_id:
        _check_session(CheckoutSession.objects.filter(pk=session_id).first(), session_id, organization)

    check_amount_worth(chain_id=data["srcChain"], address=data["srcTokenAddress"], amount=data["srcAmount"],
                       field="srcAmount")  # fmt: skip
    order_id = uuid.uuid4()
    global_address = deposit_address(
        chain_id=data["srcChain"], kind="order", identifier=str(order_id), field="srcChain"
    )
    balance = recipient_discount_balance(data["recipientAddress"])
    usd_value = token_usd_value(
        chain_id=data["srcChain"], address=data["srcTokenAddress"], amount=data["srcAmount"]
    )
    extras = get_onramp_adapter().order_extras(
        order_id=str(order_id),
        global_address=global_address,
        data=data,
        payer_ip=payer_ip,
        usd_value=usd_value,
        recipient_balance=balance,
    )
    onramp_metadata = _onramp_metadata(data.get("onramp"), payer_ip=payer_ip, fingerprint=fingerprint)
    if onramp_metadata is not None:
        onramp_metadata.update(extras.pop("onramp_metadata", {}))
    points_amount, _ = fees.points_for(usd_value=usd_value, recipient_balance=balance)
    metadata = with_token_shapes(data)
    now = timezone.now()
    try:
        with transaction.atomic():
            session = None
            if session_id:
                session = CheckoutSession.objects.select_for_update().filter(pk=session_id).first()
                _check_session(session, session_id, organization)
                assert session is not None  # _check_session refuses a missing one
                organization = organization or session.organization
            order = Order.objects.create(
                id=order_id,
                organization=organization,
                checkout_session=session,
                platform_session=platform_session,
                type=data["type"],
                recipient_address=data["recipientAddress"],
                refund_address=data.get("refundAddress") or "",
                global_address=global_address,
                src_chain=data["srcChain"],
                dst_chain=data["dstChain"],
                src_token_address=data["srcTokenAddress"],
                dst_token_address=data["dstTokenAddress"],
                src_amount=data["srcAmount"],
                created_at=now,
                expired_at=now + timedelta(seconds=settings.ORDER_LIFETIME_SECONDS),
                creator_address=(data.get("creatorAddress") or "").lower() or None,
                partner_id=data.get("partnerId"),
                client_reference_id=data.get("clientReferenceId") or None,
                onramp_metadata=onramp_metadata,
                payload=data["payload"],
                metadata=metadata,
                action=data.get("action") or data["payload"].get("action"),
                fee=extras.pop("fee", None)
                or fees.standard_fee(usd_value=usd_value, recipient_balance=balance).as_dict(),
                points_amount=points_amount,
                **extras,
            )
            watch_address(
                chain_id=order.src_chain, address=order.global_address, owner=f"order:{order.pk}",
                watch_until=order.expired_at + WATCH_AFTER_EXPIRY,
            )  # fmt: skip
            return order
    except IntegrityError:
        # Two requests raced for the same session; the unique constraint let one through.
        raise Conflict("this checkout session already has an order.", field="checkoutSessionId") from None


# Lifecycle transitions (DESIGN.md): each is one conditional update, so a replayed
# chain event or a second worker changes nothing; each that happens is recorded.

ADVANCE: dict[str, tuple[str, ...]] = {  # target status -> the statuses it may follow
    Order.Status.SENDING_TOKEN_FROM_VAULT: (Order.Status.QUOTING_AFTER_DEPOSIT,),
    Order.Status.RELAY: (Order.Status.SENDING_TOKEN_FROM_VAULT,),
    Order.Status.EXECUTING: (Order.Status.RELAY,),
}
CALLS_CONTRACT = {"custom", "custom_exact_in", "mint_nft", "join_tournament", "fund_tournament"}
TERMINAL = {Order.Status.EXECUTED, Order.Status.REFUNDED, Order.Status.FAILURE, Order.Status.EXPIRED}
WAITING = [Order.Status.SCANNING_DEPOSIT, Order.Status.WAITING_STRIPE_PAYMENT]  # for a deposit or a card


@transaction.atomic
def order_transition(
    order: Order, *, from_statuses, to_status: str, reason: str = "", actor: str = "system", **fields
) -> bool:
    """Move the order to `to_status` if it is in one of `from_statuses`, and record the change; refreshes it."""
    from_statuses = list(from_statuses)
    current = Order.objects.select_for_update().filter(pk=order.pk).values_list("status", flat=True).first()
    changed = current in from_statuses and Order.objects.filter(pk=order.pk, status__in=from_statuses).update(
        status=to_status, status_changed_at=timezone.now(), **fields
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
    order.refresh_from_db()
    return bool(changed)


# How long after an order expires its deposit address is still watched, so that a late payment is
# seen (and marked for refund) rather than lost.
WATCH_AFTER_EXPIRY = timedelta(days=1)
# Types whose price is fixed: what arrives beyond it goes back. Swaps settle what arrived.
FIXED_PRICE = CALLS_CONTRACT


def has_fixed_price(order: Order) -> bool:
    """What arrives beyond the order's `srcAmount` goes back to the payer: a contract call's price, and every
    payment of a merchant's checkout (a link, session or widget names what the merchant is paid)."""
    return order.type in FIXED_PRICE or order.platform_session_id is not None


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
    The session's row is locked before the order's, as its expiry does.
    """
    _lock_sessions(order)
    order = Order.objects.select_for_update(of=("self",)).select_related("checkout_session").get(pk=order.pk)
    token = token or order.src_token_address
    counted = token.lower() == order.src_token_address.lower()
    late = order.status != Order.Status.SCANNING_DEPOSIT or (
        order.checkout_session is not None and order.checkout_session.status == "expired"
    )
    reason = (
        DepositTx.RefundReason.WRONG_TOKEN if not counted else DepositTx.RefundReason.LATE if late else ""
    )
    deposit, created = DepositTx.objects.get_or_create(
        order=order,
        chain=chain,
        tx_hash=tx_hash,
        log_index=log_index,
        defaults={
            "amount": amount, "from_address": from_address, "block_number": block_number,
            "block_hash": block_hash, "token_address": token, "counted": counted and not late,
            "refund_reason": reason, "refund_amount": amount if reason else None, "deposit_id": deposit_id,
        },
    )  # fmt: skip
    if not created or reason:
        return order
    total = sum(int(d.amount) for d in order.deposit_txs.filter(counted=True))
    surplus = max(total - int(order.src_amount), 0) if has_fixed_price(order) else 0
    if surplus:
        DepositTx.objects.filter(pk=deposit.pk).update(
            refund_reason=DepositTx.RefundReason.SURPLUS, refund_amount=surplus
        )
    if order.platform_session_id:
        checkout.on_deposit(order, deposit, received=total, surplus=surplus)
    if total >= int(order.src_amount):
        order_transition(
            order,
            from_statuses=[Order.Status.SCANNING_DEPOSIT],
            to_status=Order.Status.QUOTING_AFTER_DEPOSIT,
            reason=f"{total} received",
            received_deposit_at=timezone.now(),
        )
        _session_mark_processing(order)
    return order


@transaction.atomic
def order_withdraw_deposit(*, order: Order, deposit_id: int) -> Order:
    """A reorg took one of the order's deposits off the chain, and it did not come back: it stops counting.

    While the order still waits for its payment and nothing was sent for the
    deposit, that is all: the order waits for the rest again. Otherwise (the
    order moved on because of it, or a refund of it was asked for) staff must
    look: an incident about the order holds its settlement, so nothing more is
    sent for it (orders/settlement.py).
    """
    _lock_sessions(order)
    order = Order.objects.select_for_update(of=("self",)).get(pk=order.pk)
    deposit = DepositTx.objects.filter(order=order, deposit_id=deposit_id, withdrawn_at__isnull=True).first()
    if deposit is None:
        return order
    DepositTx.objects.filter(pk=deposit.pk).update(
        withdrawn_at=timezone.now(), counted=False, refund_amount=None
    )
    refund_asked = OutboxTx.objects.filter(key__startswith=f"order:{order.pk}:refund:{deposit.pk}").exists()
    moved_on = deposit.counted and order.status != Order.Status.SCANNING_DEPOSIT
    if not (refund_asked or moved_on):
        logger.warning("Order %s: deposit %s (%s) was taken off the chain by a reorg; it no longer counts",
                       order.pk, deposit.pk, deposit.tx_hash)  # fmt: skip
        return order
    incident_record(
        kind=Incident.Kind.DEPOSIT_REORGED, subject=f"order:{order.pk}", chain_id=deposit.chain,
        summary=f"order {order.pk} ({order.status}): its deposit of {deposit.amount} in {deposit.tx_hash} was taken "
                f"off the chain by a reorg after it " + ("was counted" if moved_on else "was sent back")
                + "; nothing more is sent for the order until staff resolve this",
        details={"deposit": deposit.pk, "tx_hash": deposit.tx_hash, "amount": str(deposit.amount),
                 "status": order.status},
    )  # fmt: skip
    return order


def _lock_sessions(order: Order) -> None:
    """Lock the order's session rows before the order's, in the order their expiry takes them."""
    if order.checkout_session_id:
        CheckoutSession.objects.select_for_update().filter(pk=order.checkout_session_id).first()
    if order.platform_session_id:
        PlatformCheckoutSession.objects.select_for_update().filter(pk=order.platform_session_id).first()


CARD_PAYMENT_PREFIX = "pi_"  # a card deposit's "transaction" is its payment intent


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
    _lock_sessions(order)
    order = Order.objects.select_for_update(of=("self",)).select_related("checkout_session").get(pk=order.pk)
    late = order.status != Order.Status.WAITING_STRIPE_PAYMENT or (
        order.checkout_session is not None and order.checkout_session.status == "expired"
    )
    amount = int(order.src_amount)
    _, created = DepositTx.objects.get_or_create(
        order=order, chain=order.src_chain, tx_hash=payment_intent_id, log_index=-1,
        defaults={"amount": amount, "from_address": settings.VAULT_ADDRESS, "token_address": order.src_token_address,
                  "counted": not late, "refund_reason": DepositTx.RefundReason.LATE if late else "",
                  "refund_amount": amount if late else None},
    )  # fmt: skip
    if created and not late:
        order_transition(order, from_statuses=[Order.Status.WAITING_STRIPE_PAYMENT],
                         to_status=Order.Status.QUOTING_AFTER_DEPOSIT, reason=f"card payment {payment_intent_id}",
                         received_deposit_at=timezone.now())  # fmt: skip
        _session_mark_processing(order)
    return order


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
    """The outcome arrived: award points, complete the session, emit `payment.completed`."""
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
    _session_complete(order)
    if order.platform_session_id:
        checkout.on_executed(order)  # payment.completed carries the session's transaction
    else:
        emit_event(
            organization=order.organization, event_type="payment.completed", data=payment_event_data(order)
        )
    return True


@transaction.atomic
def order_fail(*, order: Order, error: str, actor: str = "system") -> bool:
    """The order cannot complete: `failure`, its session expired, then `refunding` when it holds a deposit.

    `payment.failed` is emitted once the money is back (`order_refunded`), or
    now when nothing was paid.
    """
    active = [s for s in Order.Status.values if s not in TERMINAL and s != Order.Status.REFUNDING]
    if not order_transition(
        order, from_statuses=active, to_status=Order.Status.FAILURE, reason=error, actor=actor,
        error_details=error[:2000],
    ):  # fmt: skip
        return False
    if order.checkout_session_id:
        checkout_session_expire(
            session_id=order.checkout_session_id, reason="order_failed", from_statuses=("open", "processing")
        )
    if order.deposit_txs.exists():
        order_transition(order, from_statuses=[Order.Status.FAILURE], to_status=Order.Status.REFUNDING,
                         reason="the deposit goes back to its sender", actor=actor)  # fmt: skip
    elif order.platform_session_id:
        checkout.on_failed(order, error=order.error_details or error, refund_tx_hash=None)
    else:
        emit_event(
            organization=order.organization, event_type="payment.failed",
            data=payment_event_data(order) | {"error": order.error_details, "refund_tx_hash": None},
        )  # fmt: skip
    return True


@transaction.atomic
def order_refunded(*, order: Order, refund_tx_hash: str | None, actor: str = "system") -> bool:
    """Every deposit is back with its sender: `refunded`, and `payment.failed` with the refund's hash."""
    if not order_transition(
        order, from_statuses=[Order.Status.REFUNDING], to_status=Order.Status.REFUNDED,
        reason=f"refunded in {refund_tx_hash}" if refund_tx_hash else "nothing to refund", actor=actor,
    ):  # fmt: skip
        return False
    if order.platform_session_id:
        checkout.on_failed(order, error=order.error_details or "expired", refund_tx_hash=refund_tx_hash)
        return True
    emit_event(
        organization=order.organization, event_type="payment.failed",
        data=payment_event_data(order) | {"error": order.error_details or "expired", "refund_tx_hash": refund_tx_hash},
    )  # fmt: skip
    return True


def orders_expire_unpaid(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Orders still waiting for their deposit after `expiredAt` become `expired` (and so do their sessions).

    An order that expires unpaid emits no payment event (nothing was paid);
    its session, if any, emits `checkout.expired`.
    """
    now = now or timezone.now()
    expired = 0
    while True:
        due = list(Order.objects.filter(status__in=WAITING, expired_at__lte=now)[:batch_size])
        for order in due:
            with transaction.atomic():
                if order.checkout_session_id:  # the session's row first, as a deposit locks them
                    CheckoutSession.objects.select_for_update().filter(pk=order.checkout_session_id).first()
                if order_transition(order, from_statuses=WAITING, to_status=Order.Status.EXPIRED,
                                    reason="not paid in time"):  # fmt: skip
                    expired += 1
                    if order.checkout_session_id:
                        checkout_session_expire(session_id=order.checkout_session_id, reason="order_expired")
        if len(due) < batch_size:
            return expired


def payment_event_data(order: Order) -> dict[str, Any]:
    session = order.checkout_session
    sender, tx_hash = order.deposit_txs.values_list("from_address", "tx_hash").first() or (None, None)
    return webhook_payment_data(
        payment_id=str(order.id),
        amount=order.src_amount,
        token_address=order.src_token_address,
        chain_id=order.src_chain,
        sender_address=sender,
        recipient_address=order.recipient_address,
        tx_hash=tx_hash,
        status=order.status,
        created_at=order.created_at,
        completed_at=order.filled_at,
        client_reference_id=session.client_reference_id if session else order.client_reference_id,
        metadata=session.metadata if session else {},
    )


from orders import checkout  # noqa: E402 - the link checkout builds on the services above
