"""Platform checkout sessions (`cs_`): a checkout for a payment link, a widget, or an amount.

A session names what the merchant receives (token, chain, recipient, amount).
It is `open` until the payer's order is paid (`processing`), then `completed`
(checkout.subscribers); it `expired` when its time ran out, when the merchant
expired it, or when its link was deleted. A discount code applied to it holds
one of the code's uses until the session completes (counted) or ends
(released).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from chains.payees import payout_chain_refusal
from checkout.discounts import (
    Discount,
    DiscountRefused,
    discount_amount,
    discount_evaluate,
    discount_release,
    discount_reserve,
)
from checkout.inputs import SessionRequest
from checkout.models import CheckoutSession, PaymentLink, Widget, WidgetEvent
from checkout.payloads import checkout_expired_data
from checkout.states import SESSION
from checkout.status_version import status_changed
from checkout.widgets import deposit_options, widget_event_record
from core.errors import Conflict, InvalidRequest
from merchant.api import check_product
from orders.models import Order
from orders.services import WAITING, order_expire
from platform_api.inputs import check_amounts_worth, check_token
from platform_api.models import Organization
from webhooks.events import EventType, emit_event

logger = logging.getLogger(__name__)
Session = CheckoutSession


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


def session_new(
    *,
    organization: Organization,
    ask: SessionRequest,
    widget: Widget | None = None,
    link: PaymentLink | None = None,
) -> Session:
    """The session `ask` describes, checked but not saved: for a payment link (its token, chain, recipient,
    price; `link` when the caller has already read it) or for an amount; `open`."""
    if ask.payment_link_id:
        if link is None or link.pk != ask.payment_link_id:
            link = _link_for(organization, ask.payment_link_id)
        check_link_payable(link)
        token_address, chain_id, recipient_address = link.token_address, link.chain_id, link.recipient_address
        amount = int(link.amount) if link.amount is not None else ask.amount
        check_amount_for_link(link, ask.amount)  # an amount sent for a fixed price must be that price
    else:
        link = None
        if ask.token_address is None or ask.chain_id is None or ask.recipient_address is None:
            raise InvalidRequest("A session names a payment link, or a token, chain and recipient.")
        token_address, chain_id, recipient_address = ask.token_address, ask.chain_id, ask.recipient_address
        if (refusal := payout_chain_refusal(chain_id)) is not None:
            raise InvalidRequest(f"'chain_id': {refusal}", field="chain_id")
        check_token(chain_id, token_address)
        amount = ask.amount  # none: the payer enters it on the hosted page
        check_amounts_worth(chain_id, token_address, {"amount": amount})
    check_product(organization, ask.product_id)
    now = timezone.now()
    return Session(
        organization=organization,
        payment_link=link,
        widget=widget,
        product_id=ask.product_id,
        amount=amount,
        token_address=token_address,
        chain_id=chain_id,
        recipient_address=recipient_address,
        success_url=ask.success_url,
        cancel_url=ask.cancel_url,
        client_reference_id=ask.client_reference_id,
        metadata=ask.metadata,
        customer_email=ask.customer_email,
        customer_name=ask.customer_name,
        utm_source=ask.utm_source,
        utm_medium=ask.utm_medium,
        utm_campaign=ask.utm_campaign,
        created_at=now,
        updated_at=now,
        expires_at=now + timedelta(seconds=ask.expires_in or settings.CHECKOUT_SESSION_DEFAULT_TTL_SECONDS),
    )


@transaction.atomic
def platform_session_create(
    *, organization: Organization, ask: SessionRequest, widget: Widget | None = None
) -> Session:
    """A checkout for a payment link or for an amount (`session_new`), saved; `open`.

    A session started from a widget's page names it: its completion counts for the widget.
    """
    session = session_new(organization=organization, ask=ask, widget=widget)
    session.save(force_insert=True)
    if ask.discount_code and session.amount is not None:
        _apply_discount(session, ask.discount_code, int(session.amount))
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
        ask=SessionRequest(
            token_address=token,
            chain_id=chain_id,
            amount=amount,
            recipient_address=config["recipient_address"],
        ),
        widget=widget,
    )
    widget_event_record(widget.id, WidgetEvent.Kind.INTERACTION, session.id)
    return session


def discount_for(session: Session, code: str, amount: int) -> Discount:
    """What `code` takes off `amount` for the session, checked (never all of it); InvalidRequest with the
    reason. Holds nothing: `discount_reserve` does."""
    try:
        discount = discount_evaluate(
            organization=session.merchant,
            code=code,
            payment_link_id=session.payment_link_id,
            amount=amount,
        )
    except DiscountRefused as refused:
        raise InvalidRequest(refused.reason, field="discount_code") from None
    if discount.final(amount) <= 0:
        raise InvalidRequest("the discount leaves nothing to pay.", field="discount_code")
    return discount


def discount_hold(discount: Discount) -> None:
    """One of the code's uses held for a checkout in flight; InvalidRequest when none is left."""
    if not discount_reserve(discount.code):
        raise InvalidRequest("Code has reached maximum number of uses", field="discount_code")


def _apply_discount(session: Session, code: str, amount: int) -> None:
    """Take the code off the session's amount and hold one of its uses; InvalidRequest with the reason."""
    discount = discount_for(session, code, amount)
    discount_hold(discount)
    Session.objects.filter(pk=session.pk).update(
        discount_code=discount.code,
        discount_amount=discount.amount,
        discount_reserved=True,
        amount=discount.final(amount),
        updated_at=timezone.now(),
    )
    session.refresh_from_db()


def release_discount_hold(session: Session) -> None:
    code_id = session.discount_code_id if session.discount_reserved else None
    if code_id and Session.objects.filter(pk=session.pk, discount_reserved=True).update(
        discount_reserved=False
    ):
        discount_release(code_id)


@transaction.atomic
def session_expire(
    *, session_id: str, reason: str, from_statuses: tuple[str, ...] = ("open",), strict: bool = False
) -> Session | None:
    """`open -> expired` (or from `from_statuses`), for a session of either interface, with its waiting order
    and its discount hold; emits `checkout.expired`.

    The session's row is locked first, as a payment to its order locks it (`orders.events.Locking`), so a
    payment and the expiry never both win: the waiting order is `expired` in this transaction, and a deposit
    that arrives later is refunded, never executed. None when the session is not in `from_statuses` (or is
    gone); with `strict`, that is a Conflict (400 `invalid_status_transition`).
    """
    session = Session.objects.select_for_update().filter(pk=session_id).first()
    if session is None or session.status not in from_statuses:
        if strict and session is not None:
            raise Conflict(
                f"checkout session {session_id} is {session.status}; only an open session can expire."
            )
        return None
    now = timezone.now()
    SESSION.move(
        Session.objects.filter(pk=session_id),
        from_=(session.status,),
        to=Session.Status.EXPIRED,
        expired_at=now,
        updated_at=now,
    )
    status_changed(session_id)
    waiting = Order.objects.filter(
        Q(session_order__session_id=session_id) | Q(checkout_session_id=session_id), status__in=WAITING
    )
    for order in waiting:
        order_expire(order=order, reason=f"its checkout session expired ({reason})", announce=False)
    session.refresh_from_db()
    release_discount_hold(session)
    emit_event(
        organization=session.organization,
        event_type=EventType.CHECKOUT_EXPIRED,
        subject=session.id,
        data=checkout_expired_data(session, reason),
    )
    return session


def sessions_expire_due(*, now=None, batch_size: int = 500) -> int:
    """Every open session past `expires_at` expires, whichever interface made it (the periodic task)."""
    now = now or timezone.now()
    expired = 0
    while True:
        due = list(
            Session.objects.filter(status="open", expires_at__lte=now).values_list("pk", flat=True)[
                :batch_size
            ]
        )
        for session_id in due:
            expired += session_expire(session_id=session_id, reason="timeout") is not None
        if len(due) < batch_size:
            return expired


def link_sessions_expire(*, link_id: str) -> None:
    """A deleted link's open sessions expire with it (in the deletion's transaction)."""
    for session_id in Session.objects.filter(payment_link_id=link_id, status="open").values_list(
        "pk", flat=True
    ):
        session_expire(session_id=session_id, reason="payment_link_deleted")


# --- the payer's form ------------------------------------------------------------------


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
    locale: str = "",
) -> Session:
    """The hosted page's form: the amount (for a payer-chosen price), a discount, the form and shipping."""
    session = (
        Session.objects.select_for_update(of=("self",)).select_related("payment_link").get(pk=session.pk)
    )
    if session.status != Session.Status.OPEN or session.expires_at <= timezone.now():
        raise InvalidRequest("this checkout is no longer open.")
    if Order.objects.filter(session_order__session=session).exclude(status=Order.Status.EXPIRED).exists():
        raise Conflict("this checkout already has a payment under way.")
    if session.payment_link is not None:
        check_link_payable(session.payment_link, field="amount")
    total = payer_total(session, amount, shipping_option)
    # A code already applied (by the merchant when it created the session, or by the payer before) stays,
    # with its held use, unless the payer enters another one: the page does not ask for it again.
    kept = session.discount_code if session.discount_reserved else None
    if kept is not None and discount_code and discount_code.strip().upper() != kept.code:
        kept = None
    if kept is None:
        release_discount_hold(session)
    kept_amount = discount_amount(kept, total) if kept is not None else None
    if kept_amount is not None and kept_amount >= total:
        raise InvalidRequest("the discount leaves nothing to pay.", field="discount_code")
    Session.objects.filter(pk=session.pk).update(
        amount=total - (kept_amount or 0),
        discount_code=kept,
        discount_amount=kept_amount,
        form_data=form_data,
        shipping_option=shipping_option,
        shipping_address=shipping_address,
        customer_email=customer_email or session.customer_email,
        locale=locale or session.locale,
        updated_at=timezone.now(),
    )
    session.refresh_from_db()
    if discount_code and kept is None:
        _apply_discount(session, discount_code, total)
    return session


def payer_total(session: Session, amount: int | None, shipping_option: dict | None) -> int:
    """What the payer's answers come to before a discount: the session's price (or, for a price the payer
    chooses, the `amount` they entered, within the link's bounds) and the shipping they chose."""
    base = session_subtotal(session) if session.amount is not None else amount
    if base is None:
        raise InvalidRequest("enter an amount.", field="amount")
    check_amount_for_link(session.payment_link, base)
    return base + (int(shipping_option["amount"]) if shipping_option else 0)


def session_subtotal(session: Session) -> int:
    """The session's price before its discount and shipping (`amount` = subtotal + shipping - discount)."""
    shipping = int(session.shipping_option["amount"]) if session.shipping_option else 0
    return int(session.amount) + int(session.discount_amount or 0) - shipping
