"""The payer pays a session: the token they pick makes an order (type `x402_swap`: the merchant's amount is
fixed, the payer's follows from the quote) whose deposit address they pay; the hosted page polls its status.

A session has one waiting order at a time: picking another token replaces an
unpaid order (it expires, so a late payment to it is refunded).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from chains.tokens import token_get
from checkout.inputs import SessionRequest
from checkout.models import PaymentLink, SessionOrder
from checkout.selectors import order_received
from checkout.sessions import (
    Session,
    check_link_payable,
    discount_for,
    discount_hold,
    payer_total,
    platform_session_create,
    session_new,
)
from checkout.status_version import status_changed
from core.compiled import CompiledRead
from core.errors import Conflict, InvalidRequest
from orders.events import OrderOwner
from orders.fees import amount_before_fee_added, fee_amount, gross_for_net, standard_fee, token_usd_value
from orders.inputs import EXACT_OUTPUT, OrderRequest, QuoteInput
from orders.models import Order
from orders.services import WAITING, order_create, order_expire, quote_build

ORDER_TYPE = "x402_swap"  # the merchant's amount is fixed; the payer's follows from the quote
OWNER = OrderOwner.CHECKOUT  # the owner of the orders the checkout creates (orders.events)


def _cost(session: Session, src_chain: int, src_token: str, amount: int) -> tuple[int, int]:
    """(what `amount` of the session's token costs in the payer's token before the fee, the recipient's
    discount-token balance), from the quote provider."""
    quote, _ = quote_build(
        QuoteInput(
            type=ORDER_TYPE,
            trade_type=EXACT_OUTPUT,
            amount=amount,
            src_chain=src_chain,
            dst_chain=session.paid_on_chain,
            src_token_address=src_token,
            dst_token_address=session.token_address,
            recipient_address=session.recipient_address or None,
        )
    )
    bps = int(quote["fee"].get("finalFeeBps") or 0)
    return amount_before_fee_added(int(quote["currencyIn"]["amount"]), bps), int(
        quote["fee"]["recipientBalance"]
    )


def _target_amounts(session: Session, src_chain: int, src_token: str) -> tuple[int, int]:
    """(what the payer sends, what the merchant must receive at least) for the session's amount.

    Settlement prices what arrives and takes the order's fee from that, rounded down (orders.settlement).
    The order's fee tier follows the USD value of what the payer sends, so when the payer carries the fee
    the two are settled together (a tier boundary between them takes a step more).
    """
    price = int(session.amount)
    worth, balance = _cost(session, src_chain, src_token, price)

    def order_bps(src_amount: int) -> int:
        usd = token_usd_value(chain_id=src_chain, address=src_token, amount=src_amount)
        return standard_fee(usd_value=usd, recipient_balance=balance).final_fee_bps

    if session.payment_link is not None and session.payment_link.fee_on_top:
        # The smallest payment that leaves the whole price once the fee is taken from it.
        bps = order_bps(worth)
        for _ in range(3):
            sent, _ = _cost(session, src_chain, src_token, gross_for_net(price, bps))
            if order_bps(sent) == bps:
                break
            bps = order_bps(sent)
        return sent, price
    # The merchant carries the fee: the payer sends the amount's worth, the merchant gets it less the fee.
    return worth, price - fee_amount(price, order_bps(worth))


def _check_payable_token(src_chain: int, src_token: str) -> None:
    if token_get(chain_id=src_chain, address=src_token) is None:
        raise InvalidRequest(
            f"{src_token} is not a token of the registry on chain {src_chain}.", field="token"
        )


@dataclass(frozen=True)
class PayerAnswers:
    """What the payer answered on the hosted page's form (checkout.hosted_form), in the service's units."""

    pay_with: tuple[int, str]  # (chain id, token address)
    amount: int | None = None  # for a price the payer chooses
    discount_code: str = ""
    form_data: dict = field(default_factory=dict)
    shipping_option: dict | None = None
    shipping_address: dict | None = None
    email: str = ""
    locale: str = ""


def session_order_create(
    *,
    session: Session,
    src_chain: int,
    src_token: str,
    payer_ip: str,
    order_id: uuid.UUID | None = None,
    src_amount: int | None = None,
) -> Order:
    """The payer pays the session with `src_token` on `src_chain`: an order with its own deposit address.

    An unpaid order of the session for another token is replaced (it expires);
    one that has received anything must be completed instead. An x402 payment names the order's id (its
    deposit address was offered before the order existed) and what the payer authorized (`src_amount`, from
    the offer's quote); the merchant's minimum follows from the quote now.
    """
    _check_payable_token(src_chain, src_token)
    session = Session.objects.select_related("payment_link", "organization").get(pk=session.pk)
    if session.amount is None:
        raise InvalidRequest("enter an amount first.", field="amount")
    quoted, minimum = _target_amounts(session, src_chain, src_token)  # outside the lock: a provider call
    src_amount = quoted if src_amount is None else src_amount
    with transaction.atomic():
        session = (
            Session.objects.select_for_update(of=("self",))
            .select_related("payment_link", "organization")
            .get(pk=session.pk)
        )
        if session.status != Session.Status.OPEN or session.expires_at <= timezone.now():
            raise InvalidRequest("this checkout is no longer open.")
        if session.payment_link is not None:
            check_link_payable(session.payment_link)
        for current in Order.objects.filter(session_order__session=session, status__in=WAITING):
            if current.deposit_txs.exists():
                raise Conflict("a payment to this checkout has arrived; send the rest to the same address.")
            order_expire(order=current, reason="the payer chose another token", announce=False)
        order, _ = _order_for(
            session,
            src_chain=src_chain,
            src_token=src_token,
            src_amount=src_amount,
            minimum=minimum,
            payer_ip=payer_ip,
            order_id=order_id,
        )
        return order


def _order_for(
    session: Session,
    *,
    src_chain: int,
    src_token: str,
    src_amount: int,
    minimum: int,
    payer_ip: str,
    order_id: uuid.UUID | None = None,
) -> tuple[Order, str]:
    """The order that pays the session (`src_amount` of `src_token`, the merchant receiving `minimum` at
    least), bound to it, and the status version its commit sets; in the caller's transaction, which holds the
    session."""
    request = OrderRequest(
        type=ORDER_TYPE,
        src_chain=src_chain,
        dst_chain=session.paid_on_chain,
        src_token_address=src_token,
        dst_token_address=session.token_address,
        src_amount=src_amount,
        recipient_address=session.recipient_address,
        payload={"expectedDstAmount": str(minimum)},
        metadata={"checkoutSessionId": session.id},
        client_reference_id=session.client_reference_id or None,
    )
    order = order_create(
        organization=session.organization,
        request=request,
        payer_ip=payer_ip,
        owner=OWNER,
        fixed_price=True,
        order_id=order_id,
    )
    SessionOrder.objects.create(session=session, order=order)
    return order, status_changed(session.pk)


@dataclass(frozen=True)
class Started:
    """A checkout started on a link's page: its session and order as written, and the status version their
    commit set (checkout.status_version)."""

    session: Session
    order: Order
    version: str


def link_checkout_start(
    *, link: PaymentLink, ask: SessionRequest, answers: PayerAnswers, payer_ip: str
) -> Started:
    """A payer sends a link page's form: a session holding their answers and the order that pays it with the
    token they picked, written together.

    The session is new, so nothing else can see or hold it: it is built and priced in memory (the discount
    checked, the provider's quote asked, no transaction open), then written with its order in one
    transaction that also holds the discount's use. A refusal leaves nothing written.
    """
    session = session_new(organization=link.organization, ask=ask, link=link)
    total = payer_total(session, answers.amount, answers.shipping_option)
    discount = discount_for(session, answers.discount_code, total) if answers.discount_code else None
    session.amount = discount.final(total) if discount else total
    session.discount_code = discount.code if discount else None
    session.discount_amount = discount.amount if discount else None
    session.discount_reserved = discount is not None
    session.form_data = answers.form_data
    session.shipping_option = answers.shipping_option
    session.shipping_address = answers.shipping_address
    session.customer_email = answers.email or session.customer_email
    session.locale = answers.locale
    src_chain, src_token = answers.pay_with
    _check_payable_token(src_chain, src_token)
    src_amount, minimum = _target_amounts(session, src_chain, src_token)
    with transaction.atomic():
        if discount is not None:
            discount_hold(discount)
        session.save(force_insert=True)
        order, version = _order_for(
            session,
            src_chain=src_chain,
            src_token=src_token,
            src_amount=src_amount,
            minimum=minimum,
            payer_ip=payer_ip,
        )
    return Started(session=session, order=order, version=version)


_latest_order = CompiledRead(
    lambda session_id: Order.objects.filter(session_order__session_id=session_id).order_by("-created_at")
)


def session_current_order(session: Session) -> Order | None:
    """The order that pays the session: the latest (an earlier one was replaced before it was paid)."""
    return _latest_order.first(session.pk)


def session_takes_a_token(session: Session, order: Order | None, *, change: bool = False) -> bool:
    """Whether the payer picks (again) what to pay with: an open session without an order, or whose order
    received nothing and either expired or is being changed (`change`)."""
    if session.status != Session.Status.OPEN:
        return False
    if order is None:
        return True
    return (change or order.status == Order.Status.EXPIRED) and not order.deposit_txs.exists()


STATUS_FIELDS = (
    "id",
    "status",
    "global_address",
    "src_chain",
    "src_token_address",
    "src_amount",
    "expired_at",
    "error_details",
    "created_at",
)


_latest_order_status = CompiledRead(
    lambda session_id: (
        Order.objects.filter(session_order__session_id=session_id)
        .only(*STATUS_FIELDS)
        .order_by("-created_at")
    )
)


def session_status_data(
    session: Session, order: Order | None = None, received: int | None = None
) -> dict[str, Any]:
    """What the hosted page polls: the session, its order's deposit address, what arrived and what is owed
    (`received`, when the caller knows it: an order it has just made has received nothing)."""
    if order is None:
        order = _latest_order_status.first(session.pk)
    data: dict[str, Any] = {
        "session": {
            "id": session.id,
            "status": session.status,
            "expires_at": int(session.expires_at.timestamp() * 1000),
        },
        "order": None,
    }
    if order is None:
        return data
    received = order_received(order) if received is None else received
    refund = None
    if order.status in (Order.Status.FAILURE, Order.Status.REFUNDING, Order.Status.REFUNDED):
        refund = order.refund_txs.order_by("-created_at").values_list("tx_hash", flat=True).first()
    data["order"] = {
        "id": str(order.id),
        "status": order.status,
        "deposit_address": order.global_address,
        "chain_id": order.src_chain,
        "token_address": order.src_token_address,
        "amount": str(order.src_amount),
        "received": str(received),
        "remaining": str(max(int(order.src_amount) - received, 0)),
        "expires_at": int(order.expired_at.timestamp() * 1000),
        "refund_tx_hash": refund,
        "error": order.error_details,
    }
    return data


def link_payment_amounts(
    *, link: PaymentLink, amount: int, src_chain: int, src_token: str
) -> tuple[int, int]:
    """(what the payer sends, what the merchant receives at least) to pay `amount` of the link's price with
    `src_token` on `src_chain`: the hosted page's figures, computed without a session (nothing is written)."""
    session = Session(
        organization=link.organization,
        payment_link=link,
        amount=amount,
        token_address=link.token_address,
        chain_id=link.chain_id,
        recipient_address=link.recipient_address,
    )
    return _target_amounts(session, src_chain, src_token)


def link_payment_order(
    *,
    link: PaymentLink,
    amount: int,
    src_chain: int,
    src_token: str,
    src_amount: int,
    order_id: uuid.UUID,
    payer_ip: str,
) -> Order:
    """The order, with the id `order_id`, that pays `amount` of the link's price with `src_amount` of
    `src_token` on `src_chain`, in a session of its own, as the hosted page makes one: created once; asked
    again for the same id, the same order (a payment id of another link's order is refused)."""
    existing = SessionOrder.objects.filter(order_id=order_id).select_related("session", "order").first()
    if existing is None:
        try:
            with transaction.atomic():
                ask = {"payment_link_id": link.id} | ({} if link.amount is not None else {"amount": amount})
                session = platform_session_create(
                    organization=link.organization, ask=SessionRequest.from_wire(ask)
                )
                return session_order_create(
                    session=session,
                    src_chain=src_chain,
                    src_token=src_token,
                    payer_ip=payer_ip,
                    order_id=order_id,
                    src_amount=src_amount,
                )
        except (IntegrityError, Conflict):  # the same payment asked for twice at once: the other made it
            existing = (
                SessionOrder.objects.filter(order_id=order_id).select_related("session", "order").first()
            )
            if existing is None:
                raise
    if existing.session.payment_link_id != link.id or existing.order.src_chain != src_chain:
        raise Conflict("this payment belongs to another payment link or chain.")
    return existing.order
