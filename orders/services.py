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

from chains.readers import ChainUnavailable, get_chain_reader
from chains.registry import deposit_address
from chains.tokens import token_get
from chains.watcher import watch_address
from core.errors import Conflict, InvalidRequest
from orders import fees
from orders.models import CheckoutSession, DepositTx, Order, RefundTx
from orders.onramps import get_onramp_adapter
from orders.representations import session_event_data
from platform_api.models import Organization
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


def _session_transition(session_id, *, from_status: str, to_status: str, **fields) -> bool:
    """Move a session between states with one conditional update; False if it was not in `from_status`."""
    return (
        CheckoutSession.objects.filter(pk=session_id, status=from_status).update(status=to_status, **fields)
        == 1
    )


@transaction.atomic
def checkout_session_expire(*, session_id: uuid.UUID, reason: str = "expired") -> CheckoutSession | None:
    """Expire an open session and emit `checkout.expired`; None if it is not open (or gone)."""
    if not _session_transition(
        session_id, from_status="open", to_status="expired", expired_at=timezone.now()
    ):
        return None
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
    if token is None or token.usd_price is None:
        return Decimal(0)
    return Decimal(amount).scaleb(-token.decimals) * token.usd_price


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


def order_create(
    *,
    organization: Organization | None,
    data: dict[str, Any],
    payer_ip: str,
    fingerprint: dict | None = None,
) -> Order:
    """Create an order with its own deposit address, linked to an open checkout session if one is named.

    Vendor calls (an onramp session token, a card payment intent) happen before
    the database transaction, so no lock is held while a vendor answers; the
    session is checked before them and again under its row lock.
    """
    session_id = data.get("checkoutSessionId")
    if session_id:
        _check_session(CheckoutSession.objects.filter(pk=session_id).first(), session_id, organization)

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
                type=data["type"],
                recipient_address=data["recipientAddress"],
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
                metadata=data["metadata"],
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
# chain event or a second worker changes nothing.

ADVANCE: dict[str, tuple[str, ...]] = {  # target status -> the statuses it may follow
    Order.Status.SENDING_TOKEN_FROM_VAULT: (Order.Status.QUOTING_AFTER_DEPOSIT,),
    Order.Status.RELAY: (Order.Status.SENDING_TOKEN_FROM_VAULT,),
    Order.Status.EXECUTING: (Order.Status.RELAY,),
}
CALLS_CONTRACT = {"custom", "custom_exact_in", "mint_nft", "join_tournament", "fund_tournament"}


def _transition(order: Order, *, from_statuses, to_status: str, **fields) -> bool:
    changed = Order.objects.filter(pk=order.pk, status__in=list(from_statuses)).update(
        status=to_status, **fields
    )
    if changed:
        order.refresh_from_db()
    return changed == 1


# How long after an order expires its deposit address is still watched, so that a late payment is
# seen (and marked for refund) rather than lost.
WATCH_AFTER_EXPIRY = timedelta(days=1)
# Types whose price is fixed: what arrives beyond it goes back. Swaps settle what arrived.
FIXED_PRICE = CALLS_CONTRACT


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
) -> Order:
    """Record a confirmed deposit, once; when the order's token reaches `srcAmount`, move on to quoting.

    A deposit of another token is recorded and not counted; one that arrives
    after the order stopped waiting (expired, or its session expired) is
    marked for refund, and so is the surplus of a fixed-price order. Partial
    deposits are summed: the order keeps scanning until they reach its price.
    """
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
            "refund_reason": reason, "refund_amount": amount if reason else None,
        },
    )  # fmt: skip
    if not created or reason:
        return order
    total = sum(int(d.amount) for d in order.deposit_txs.filter(counted=True))
    if total >= int(order.src_amount):
        surplus = total - int(order.src_amount)
        if surplus and order.type in FIXED_PRICE:
            DepositTx.objects.filter(pk=deposit.pk).update(
                refund_reason=DepositTx.RefundReason.SURPLUS, refund_amount=surplus
            )
        _transition(
            order,
            from_statuses=[Order.Status.SCANNING_DEPOSIT],
            to_status=Order.Status.QUOTING_AFTER_DEPOSIT,
            received_deposit_at=timezone.now(),
        )
        _session_mark_processing(order)
    return order


@transaction.atomic
def order_advance(*, order: Order, to_status: str) -> bool:
    """One step along the happy path (quoting -> sending -> relay -> executing)."""
    return _transition(order, from_statuses=ADVANCE[to_status], to_status=to_status)


@transaction.atomic
def order_mark_executed(
    *, order: Order, execute_tx: dict | None = None, actual_dst_amount: str | None = None
) -> bool:
    """The outcome arrived: award points, complete the session, emit `payment.completed`."""
    from_status = Order.Status.EXECUTING if order.type in CALLS_CONTRACT else Order.Status.RELAY
    settlement = dict(order.settlement or {})
    if actual_dst_amount is not None:
        settlement["actualDstAmount"] = actual_dst_amount
    if not _transition(
        order,
        from_statuses=[from_status],
        to_status=Order.Status.EXECUTED,
        filled_at=timezone.now(),
        execute_tx=execute_tx,
        points=order.points_amount,
        settlement=settlement or None,
    ):
        return False
    _session_complete(order)
    emit_event(
        organization=order.organization, event_type="payment.completed", data=payment_event_data(order)
    )
    return True


@transaction.atomic
def order_fail(*, order: Order, error: str) -> bool:
    """The order cannot complete: `failure` (then refunding when a deposit must go back)."""
    terminal = {Order.Status.EXECUTED, Order.Status.REFUNDED, Order.Status.FAILURE, Order.Status.EXPIRED}
    active = [s for s in Order.Status.values if s not in terminal]
    if not _transition(
        order, from_statuses=active, to_status=Order.Status.FAILURE, error_details=error[:2000]
    ):
        return False
    if order.checkout_session_id:
        checkout_session_expire(session_id=order.checkout_session_id, reason="order_failed")
    emit_event(organization=order.organization, event_type="payment.failed", data=payment_event_data(order))
    if order.deposit_txs.exists():
        _transition(order, from_statuses=[Order.Status.FAILURE], to_status=Order.Status.REFUNDING)
    return True


@transaction.atomic
def order_record_refund(*, order: Order, chain: int, tx_hash: str, amount: int, succeeded: bool) -> Order:
    RefundTx.objects.create(
        order=order, chain=chain, tx_hash=tx_hash, amount=amount, status="success" if succeeded else "failure"
    )
    if succeeded:
        _transition(order, from_statuses=[Order.Status.REFUNDING], to_status=Order.Status.REFUNDED)
    return order


def orders_expire_unpaid(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Orders still waiting for their deposit after `expiredAt` become `expired` (and so do their sessions)."""
    now = now or timezone.now()
    expired = 0
    while True:
        due = list(
            Order.objects.filter(status=Order.Status.SCANNING_DEPOSIT, expired_at__lte=now).values_list(
                "pk", flat=True
            )[:batch_size]
        )
        for order_id in due:
            with transaction.atomic():
                changed = Order.objects.filter(pk=order_id, status=Order.Status.SCANNING_DEPOSIT).update(
                    status=Order.Status.EXPIRED
                )
                if changed:
                    expired += 1
                    session_id = (
                        Order.objects.filter(pk=order_id)
                        .values_list("checkout_session_id", flat=True)
                        .first()
                    )
                    if session_id:
                        checkout_session_expire(session_id=session_id, reason="order_expired")
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
