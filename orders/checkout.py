"""The checkout of payment links and platform checkout sessions (`cs_`): a payment through a link is an order.

A session names what the merchant receives (token, chain, recipient, amount).
The payer picks what to pay with on the hosted page; that makes an order
(type `x402_swap`: the destination amount is fixed) whose deposit address the
payer pays. The order's lifecycle drives the session and its transaction:

    deposit seen -> transaction pending; paid in full -> session processing,
    transaction confirming; executed -> session completed, transaction
    completed, customer updated, link and discount uses counted, events
    `checkout.completed` and `payment.completed` (the transaction as data);
    refunded -> session failed, transaction failed, `payment.failed`.

A session has one waiting order at a time: picking another token replaces an
unpaid order (it expires, so a late payment to it is refunded). The session's
row is locked before its order's, as the deposit recording does.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from chains.tokens import token_get
from core.errors import Conflict, InvalidRequest
from orders.fees import amount_before_fee_added, fee_amount, gross_for_net, standard_fee
from orders.models import DepositTx, Order
from orders.quotes import quote_build
from orders.services import WAITING, order_create, order_transition, token_usd_value
from platform_api.analytics import revenue_record
from platform_api.discounts import (
    DiscountRefused,
    discount_amount,
    discount_evaluate,
    discount_redeem,
    discount_release,
    discount_reserve,
)
from platform_api.merchant_serializers import PlatformSessionSerializer, TransactionSerializer
from platform_api.merchant_services import check_amounts_worth, check_product, check_token
from platform_api.models import (
    Customer,
    Organization,
    PaymentLink,
    PlatformCheckoutSession,
    Transaction,
    Widget,
    WidgetEvent,
)
from platform_api.widget_api import deposit_options, widget_event_record
from webhooks.events import emit_event

logger = logging.getLogger(__name__)
Session = PlatformCheckoutSession
ORDER_TYPE = "x402_swap"  # the merchant's amount is fixed; the payer's follows from the quote

# --- sessions -----------------------------------------------------------------------


def _link_for(organization: Organization, link_id: str) -> PaymentLink:
    link = PaymentLink.objects.filter(organization=organization, pk=link_id, deleted_at__isnull=True).first()
    if link is None:
        raise InvalidRequest(f"no payment link {link_id}.", field="payment_link_id")
    return link


def payer_url_params(link: PaymentLink, params: dict[str, Any]) -> dict[str, Any]:
    """A link page's URL parameters as the payer's URL gave them, less a `success_url` or `cancel_url` on a
    host that is not the merchant's: where payers are sent comes from the merchant, never from whoever
    wrote the link they clicked (`redirect_domains`, the website's host, the link's own return URL)."""
    organization = link.organization
    allowed = {host for host in organization.redirect_domains or [] if host}
    for known in (organization.website_url, link.return_url):
        if host := (urlsplit(known or "").hostname or "").lower():
            allowed.add(host)
    kept = dict(params)
    for name in ("success_url", "cancel_url"):
        host = (urlsplit(kept.get(name) or "").hostname or "").lower()
        if name in kept and not any(host == a or host.endswith("." + a) for a in allowed):
            logger.info(
                "Payment link %s: %s on %r ignored (not one of the merchant's hosts)", link.id, name, host
            )
            del kept[name]
    return kept


def check_link_payable(link: PaymentLink, field: str = "payment_link_id") -> None:
    reason = link.unavailable_reason()
    if reason:
        raise InvalidRequest(reason, field=field)


def check_amount_for_link(link: PaymentLink | None, amount: int | None, field: str = "amount") -> None:
    if link is None or amount is None:
        return
    if link.amount is not None and amount != int(link.amount):
        raise InvalidRequest(f"this link's price is fixed at {link.amount}.", field=field)
    if link.min_amount is not None and amount < int(link.min_amount):
        raise InvalidRequest(f"must be at least {link.min_amount}.", field=field)
    if link.max_amount is not None and amount > int(link.max_amount):
        raise InvalidRequest(f"must be at most {link.max_amount}.", field=field)


@transaction.atomic
def platform_session_create(
    *, organization: Organization, data: dict[str, Any], widget: Widget | None = None
) -> Session:
    """A checkout for a payment link (its token, chain, recipient, price) or for an amount; `open`.

    A session started from a widget's page names it: its completion counts for the widget.
    """
    link = None
    if data.get("payment_link_id"):
        link = _link_for(organization, data["payment_link_id"])
        check_link_payable(link)
        target = {"token_address": link.token_address, "chain_id": link.chain_id,
                  "recipient_address": link.recipient_address}  # fmt: skip
        amount = int(link.amount) if link.amount is not None else data.get("amount")
        check_amount_for_link(link, data.get("amount"))  # an amount sent for a fixed price must be that price
    else:
        target = {name: data[name] for name in ("token_address", "chain_id", "recipient_address")}
        check_token(data["chain_id"], data["token_address"])
        amount = data.get("amount")  # none: the payer enters it on the hosted page
        check_amounts_worth(data["chain_id"], data["token_address"], {"amount": amount})
    check_product(organization, data.get("product_id"))
    now = timezone.now()
    session = Session.objects.create(
        organization=organization,
        payment_link=link,
        widget=widget,
        product_id=data.get("product_id") or None,
        amount=amount,
        **target,
        success_url=data.get("success_url") or "",
        cancel_url=data.get("cancel_url") or "",
        client_reference_id=data.get("client_reference_id") or "",
        metadata=data.get("metadata") or {},
        customer_email=data.get("customer_email") or "",
        customer_name=data.get("customer_name") or "",
        utm_source=data.get("utm_source") or "",
        utm_medium=data.get("utm_medium") or "",
        utm_campaign=data.get("utm_campaign") or "",
        created_at=now,
        updated_at=now,
        expires_at=now
        + timedelta(seconds=data.get("expires_in") or settings.CHECKOUT_SESSION_DEFAULT_TTL_SECONDS),
    )
    if data.get("discount_code") and amount is not None:
        _apply_discount(session, data["discount_code"], amount)
    return session


@transaction.atomic
def widget_session_create(*, widget: Widget, deposit: str = "") -> Session:
    """The checkout a widget's button starts, for the widget's recipient: a checkout widget's token, chain and
    amount (or the payer's), or the `deposit` option (`chain:token`) the payer chose; counted as an interaction."""
    config = widget.config
    if widget.widget_type == Widget.Type.CHECKOUT:
        chain_id, token = config["destination_chain_id"], config["destination_token"]
        amount = int(config["amount"]) if config.get("amount") else None
    else:
        options = {
            f"{chain_id}:{address}": (chain_id, address) for chain_id, address, _ in deposit_options(config)
        }
        if deposit not in options:
            raise InvalidRequest("Choose what to deposit.", field="deposit")
        chain_id, token = options[deposit]
        amount = None  # the payer enters it on the checkout page
    session = platform_session_create(
        organization=widget.organization,
        data={"token_address": token, "chain_id": chain_id, "amount": amount,
              "recipient_address": config["recipient_address"]},
        widget=widget,
    )  # fmt: skip
    widget_event_record(widget.id, WidgetEvent.Kind.INTERACTION, session.id)
    return session


def _apply_discount(session: Session, code: str, amount: int) -> None:
    """Take the code off the session's amount and hold one of its uses; InvalidRequest with the reason."""
    try:
        discount = discount_evaluate(
            organization=session.organization,
            code=code,
            payment_link_id=session.payment_link_id,
            amount=amount,
        )
    except DiscountRefused as refused:
        raise InvalidRequest(refused.reason, field="discount_code") from None
    if discount.final(amount) <= 0:
        raise InvalidRequest("the discount leaves nothing to pay.", field="discount_code")
    if not discount_reserve(discount.code):
        raise InvalidRequest("Code has reached maximum number of uses", field="discount_code")
    Session.objects.filter(pk=session.pk).update(
        discount_code=discount.code, discount_amount=discount.amount, discount_reserved=True,
        amount=discount.final(amount), updated_at=timezone.now(),
    )  # fmt: skip
    session.refresh_from_db()


def _release_hold(session: Session) -> None:
    code_id = session.discount_code_id if session.discount_reserved else None
    if code_id and Session.objects.filter(pk=session.pk, discount_reserved=True).update(
        discount_reserved=False
    ):
        discount_release(code_id)


def session_data(session: Session) -> dict[str, Any]:
    return dict(PlatformSessionSerializer(session).data)


def session_block(session: Session) -> dict[str, Any]:
    """The `checkoutSession` block of every event about a session's payment."""
    return {
        "id": session.id,
        "clientReferenceId": session.client_reference_id or None,
        "metadata": session.metadata,
        "customerEmail": session.customer_email or None,
        "customerName": session.customer_name or None,
    }


@transaction.atomic
def platform_session_expire(*, session_id: str, reason: str, strict: bool = False) -> Session | None:
    """`open -> expired`, with its waiting order and its discount hold; emits `checkout.expired`.

    None when the session is not open (or gone); with `strict`, that is a
    Conflict (400 `invalid_status_transition`).
    """
    session = Session.objects.select_for_update().filter(pk=session_id).first()
    if session is None or session.status != Session.Status.OPEN:
        if strict and session is not None:
            raise Conflict(
                f"checkout session {session_id} is {session.status}; only an open session can expire."
            )
        return None
    Session.objects.filter(pk=session_id).update(status=Session.Status.EXPIRED, updated_at=timezone.now())
    for order in Order.objects.filter(platform_session_id=session_id, status__in=WAITING):
        order_transition(order, from_statuses=WAITING, to_status=Order.Status.EXPIRED,
                         reason=f"its checkout session expired ({reason})")  # fmt: skip
    session.refresh_from_db()
    _release_hold(session)
    emit_event(
        organization=session.organization, event_type="checkout.expired", subject=session.id,
        data=session_data(session) | {"checkoutSession": session_block(session), "reason": reason},
    )  # fmt: skip
    return session


def platform_sessions_expire_due(*, now=None, batch_size: int = 500) -> int:
    """Every open session past `expires_at` expires (the periodic task calls this)."""
    now = now or timezone.now()
    expired = 0
    while True:
        due = list(
            Session.objects.filter(status="open", expires_at__lte=now).values_list("pk", flat=True)[
                :batch_size
            ]
        )
        for session_id in due:
            expired += platform_session_expire(session_id=session_id, reason="timeout") is not None
        if len(due) < batch_size:
            return expired


def payment_link_deleted(link_id: str) -> None:
    """PAYMENT_LINK_DELETED_HANDLER: the link's open sessions expire (in the deletion's transaction)."""
    for session_id in Session.objects.filter(payment_link_id=link_id, status="open").values_list(
        "pk", flat=True
    ):
        platform_session_expire(session_id=session_id, reason="payment_link_deleted")


# --- the payer's choice -----------------------------------------------------------------


@transaction.atomic
def session_prepare(
    *,
    session: Session,
    amount: int | None,
    discount_code: str,
    form_data: dict,
    shipping_option: dict | None,
    shipping_address: dict | None,
    customer_email: str = "",
) -> Session:
    """The hosted page's form: the amount (for a payer-chosen price), a discount, the form and shipping."""
    session = (
        Session.objects.select_for_update(of=("self",)).select_related("payment_link").get(pk=session.pk)
    )
    if session.status != Session.Status.OPEN or session.expires_at <= timezone.now():
        raise InvalidRequest("this checkout is no longer open.")
    if Order.objects.filter(platform_session=session).exclude(status=Order.Status.EXPIRED).exists():
        raise Conflict("this checkout already has a payment under way.")
    link = session.payment_link
    if link is not None:
        check_link_payable(link, field="amount")
    base = _subtotal(session) if session.amount is not None else amount
    if base is None:
        raise InvalidRequest("enter an amount.", field="amount")
    check_amount_for_link(link, base)
    shipping = int(shipping_option["amount"]) if shipping_option else 0
    total = base + shipping
    # A code already applied (by the merchant when it created the session, or by the payer before) stays,
    # with its held use, unless the payer enters another one: the page does not ask for it again.
    kept = session.discount_code if session.discount_reserved else None
    if kept is not None and discount_code and discount_code.strip().upper() != kept.code:
        kept = None
    if kept is None:
        _release_hold(session)
    kept_amount = discount_amount(kept, total) if kept is not None else None
    if kept_amount is not None and kept_amount >= total:
        raise InvalidRequest("the discount leaves nothing to pay.", field="discount_code")
    Session.objects.filter(pk=session.pk).update(
        amount=total - (kept_amount or 0), discount_code=kept, discount_amount=kept_amount, form_data=form_data,
        shipping_option=shipping_option, shipping_address=shipping_address,
        customer_email=customer_email or session.customer_email, updated_at=timezone.now(),
    )  # fmt: skip
    session.refresh_from_db()
    if discount_code and kept is None:
        _apply_discount(session, discount_code, total)
    return session


def _subtotal(session: Session) -> int:
    """The session's price before its discount and shipping (`amount` = subtotal + shipping - discount)."""
    shipping = int(session.shipping_option["amount"]) if session.shipping_option else 0
    return int(session.amount) + int(session.discount_amount or 0) - shipping


def _cost(session: Session, src_chain: int, src_token: str, amount: int) -> tuple[int, int]:
    """(what `amount` of the session's token costs in the payer's token before the fee, the recipient's
    discount-token balance), from the quote provider."""
    quote, _ = quote_build({
        "type": ORDER_TYPE, "amount": amount, "srcChain": src_chain, "dstChain": session.chain_id,
        "srcTokenAddress": src_token, "dstTokenAddress": session.token_address,
        "recipientAddress": session.recipient_address,
    })  # fmt: skip
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


def session_order_create(*, session: Session, src_chain: int, src_token: str, payer_ip: str) -> Order:
    """The payer pays the session with `src_token` on `src_chain`: an order with its own deposit address.

    An unpaid order of the session for another token is replaced (it expires);
    one that has received anything must be completed instead.
    """
    if token_get(chain_id=src_chain, address=src_token) is None:
        raise InvalidRequest(
            f"{src_token} is not a token of the registry on chain {src_chain}.", field="token"
        )
    session = Session.objects.select_related("payment_link", "organization").get(pk=session.pk)
    if session.amount is None:
        raise InvalidRequest("enter an amount first.", field="amount")
    src_amount, minimum = _target_amounts(session, src_chain, src_token)  # outside the lock: a provider call
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
        for current in Order.objects.filter(platform_session=session, status__in=WAITING):
            if current.deposit_txs.exists():
                raise Conflict("a payment to this checkout has arrived; send the rest to the same address.")
            order_transition(current, from_statuses=WAITING, to_status=Order.Status.EXPIRED,
                             reason="the payer chose another token")  # fmt: skip
        return order_create(
            organization=session.organization,
            data={
                "type": ORDER_TYPE, "srcChain": src_chain, "dstChain": session.chain_id,
                "srcTokenAddress": src_token, "dstTokenAddress": session.token_address, "srcAmount": src_amount,
                "recipientAddress": session.recipient_address, "payload": {"expectedDstAmount": str(minimum)},
                "metadata": {"checkoutSessionId": session.id}, "clientReferenceId": session.client_reference_id,
            },
            payer_ip=payer_ip,
            platform_session=session,
        )  # fmt: skip


def session_current_order(session: Session) -> Order | None:
    """The order that pays the session: the latest (an earlier one was replaced before it was paid)."""
    return Order.objects.filter(platform_session=session).order_by("-created_at").first()


def session_takes_a_token(session: Session, order: Order | None, *, change: bool = False) -> bool:
    """Whether the payer picks (again) what to pay with: an open session without an order, or whose order
    received nothing and either expired or is being changed (`change`)."""
    if session.status != Session.Status.OPEN:
        return False
    if order is None:
        return True
    return (change or order.status == Order.Status.EXPIRED) and not order.deposit_txs.exists()


# --- what the order's lifecycle means for the session -------------------------------------


def _transaction_for(order: Order, session: Session) -> Transaction:
    row, _ = Transaction.objects.get_or_create(
        order_id=order.pk,
        defaults={
            "organization_id": session.organization_id, "session": session,
            "payment_link_id": session.payment_link_id, "chain_id": session.chain_id,
            "to_address": session.recipient_address, "token_address": session.token_address,
            "amount": int((order.payload or {}).get("expectedDstAmount") or 0),
            "source_chain_id": order.src_chain, "source_token_address": order.src_token_address,
            "source_amount": int(order.src_amount), "fee_amount": _fee_in_source(order),
            "form_data": session.form_data, "shipping_address": session.shipping_address,
            "metadata": session.metadata,
        },
    )  # fmt: skip
    return row


def _fee_in_source(order: Order) -> int:
    return fee_amount(int(order.src_amount), int((order.fee or {}).get("finalFeeBps") or 0))


def on_deposit(order: Order, deposit: DepositTx, *, received: int, surplus: int) -> None:
    """A counted deposit to a session's order (in the deposit's transaction; the session row is locked): the
    transaction shows what arrived so far, and what of it goes back (beyond the price)."""
    session = Session.objects.get(pk=order.platform_session_id)
    row = _transaction_for(order, session)
    fields: dict[str, Any] = {
        "updated_at": timezone.now(),
        "source_amount": received,
        "refunded_amount": surplus,
    }
    if not row.tx_hash:
        fields |= {"tx_hash": deposit.tx_hash, "from_address": deposit.from_address or ""}
    if received >= int(order.src_amount):
        fields["status"] = Transaction.Status.CONFIRMING
        Session.objects.filter(pk=session.pk, status=Session.Status.OPEN).update(
            status=Session.Status.PROCESSING, payer_address=deposit.from_address or "",
            tx_hash=row.tx_hash or deposit.tx_hash, updated_at=timezone.now(),
        )  # fmt: skip
    Transaction.objects.filter(pk=row.pk, status=Transaction.Status.PENDING).update(**fields)


def _customer_paid(session: Session, row: Transaction, usd: Decimal, now) -> Customer | None:
    """The payer's customer (by wallet) gains this payment; a first payment creates it."""
    wallet = (row.from_address or "").lower()
    if not wallet:
        return None
    form_email = session.form_data.get("email") if isinstance(session.form_data, dict) else None
    email = session.customer_email or (form_email if isinstance(form_email, str) else "")
    customer, created = Customer.objects.get_or_create(
        organization_id=session.organization_id, wallet_address=wallet,
        defaults={"name": session.customer_name, "email": email[:254], "first_payment_at": now},
    )  # fmt: skip
    Customer.objects.filter(pk=customer.pk).update(
        total_paid=F("total_paid") + usd, transaction_count=F("transaction_count") + 1,
        last_payment_at=now, updated_at=now,
    )  # fmt: skip
    if (
        not created
        and customer.erased_at is None
        and ((session.customer_name and not customer.name) or (email and not customer.email))
    ):
        customer.name = customer.name or session.customer_name
        customer.email = customer.email or email[:254]
        customer.save(update_fields=["name", "email"])
    return customer


def transaction_event_data(row: Transaction, session: Session) -> dict[str, Any]:
    """`data` of payment events for a session's payment: the transaction, and the session block."""
    return dict(TransactionSerializer(row).data) | {
        "sender_address": row.from_address or None,
        "recipient_address": row.to_address,
        "discount_code": session.discount_code.code if session.discount_code else None,
        "checkoutSession": session_block(session),
    }


def on_executed(order: Order) -> None:
    """The merchant was paid: complete the session and its transaction, count the uses, tell the merchant."""
    session = (
        Session.objects.select_for_update(of=("self",))
        .select_related("discount_code")
        .get(pk=order.platform_session_id)
    )
    row = _transaction_for(order, session)
    now = timezone.now()
    delivered = int(
        (order.settlement or {}).get("actualDstAmount") or (order.settlement or {}).get("dstAmount") or 0
    )
    usd = token_usd_value(chain_id=row.chain_id, address=row.token_address, amount=delivered).quantize(
        Decimal("0.01")
    )
    customer = _customer_paid(session, row, usd, now)
    if Transaction.objects.filter(pk=row.pk).exclude(status=Transaction.Status.COMPLETED).update(
        status=Transaction.Status.COMPLETED, amount=delivered, amount_usd=usd, completed_at=now, updated_at=now,
        customer=customer,
    ):  # fmt: skip
        revenue_record(organization_id=row.organization_id, completed_at=now, payment_link_id=row.payment_link_id,
                       chain_id=row.chain_id, token_address=row.token_address, amount_usd=usd)  # fmt: skip
    if Session.objects.filter(pk=session.pk, status__in=("open", "processing")).update(
        status=Session.Status.COMPLETED, completed_at=now, updated_at=now, customer=customer,
        payer_address=row.from_address, tx_hash=row.tx_hash,
    ):  # fmt: skip
        if session.payment_link_id:
            PaymentLink.objects.filter(pk=session.payment_link_id).update(current_uses=F("current_uses") + 1)
        if session.discount_reserved and session.discount_code_id:
            Session.objects.filter(pk=session.pk).update(discount_reserved=False)
            discount_redeem(session.discount_code_id)
        if session.widget_id:
            widget_event_record(session.widget_id, WidgetEvent.Kind.COMPLETION, session.id)
    session.refresh_from_db()
    row.refresh_from_db()
    data = transaction_event_data(row, session)
    emit_event(
        organization=session.organization, event_type="payment.completed", data=data, subject=session.id
    )
    emit_event(
        organization=session.organization, event_type="checkout.completed", subject=session.id,
        data=data | {
            "session": session_data(session), "form_data": session.form_data,
            "shipping_address": session.shipping_address, "shipping_option": session.shipping_option,
            "discount_amount": str(session.discount_amount) if session.discount_amount is not None else None,
        },
    )  # fmt: skip


def on_failed(order: Order, *, error: str, refund_tx_hash: str | None) -> None:
    """The payment failed (and what came is back): the session fails, its transaction too; `payment.failed`."""
    session = (
        Session.objects.select_for_update(of=("self",))
        .select_related("discount_code")
        .get(pk=order.platform_session_id)
    )
    row = _transaction_for(order, session)
    now = timezone.now()
    Transaction.objects.filter(pk=row.pk).exclude(status=Transaction.Status.COMPLETED).update(
        status=Transaction.Status.FAILED, updated_at=now
    )
    if Session.objects.filter(pk=session.pk, status=Session.Status.PROCESSING).update(
        status=Session.Status.FAILED, updated_at=now
    ):
        _release_hold(session)
    session.refresh_from_db()
    row.refresh_from_db()
    emit_event(
        organization=session.organization, event_type="payment.failed", subject=session.id,
        data=transaction_event_data(row, session) | {"error": error, "refund_tx_hash": refund_tx_hash},
    )  # fmt: skip


STATUS_FIELDS = ("id", "status", "global_address", "src_chain", "src_token_address", "src_amount", "expired_at",
                 "error_details", "created_at")  # fmt: skip


def session_status_data(session: Session, order: Order | None = None) -> dict[str, Any]:
    """What the hosted page polls: the session, its order's deposit address, what arrived and what is owed."""
    if order is None:
        order = (
            Order.objects.filter(platform_session=session)
            .only(*STATUS_FIELDS)
            .order_by("-created_at")
            .first()
        )
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
    received = sum(int(a) for a in order.deposit_txs.filter(counted=True).values_list("amount", flat=True))
    refund = None
    if order.status in (Order.Status.FAILURE, Order.Status.REFUNDING, Order.Status.REFUNDED):
        refund = order.refund_txs.order_by("-created_at").values_list("tx_hash", flat=True).first()
    data["order"] = {
        "id": str(order.id), "status": order.status, "deposit_address": order.global_address,
        "chain_id": order.src_chain, "token_address": order.src_token_address, "amount": str(order.src_amount),
        "received": str(received), "remaining": str(max(int(order.src_amount) - received, 0)),
        "expires_at": int(order.expired_at.timestamp() * 1000), "refund_tx_hash": refund,
        "error": order.error_details,
    }  # fmt: skip
    return data
