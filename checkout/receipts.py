"""The payer's receipt: what the completed (or refunded) checkout page shows, and the email sent to the payer.

One set of facts for both: what was paid, in which token on which chain, when, to whom, the merchant's
reference, the transactions (payment, delivery, refund) with explorer links where the chain has an explorer,
and the way back to the shop. The email goes through the notification outbox (webhooks.notifications: a row
written with the business change, sent by a worker after commit, retried) when the payer gave an email
address on the checkout's form, once per outcome: in the transaction that completes the session, or that
fails it with the refund sent.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from chains.registry import chain_get
from checkout.display import display_token, format_units
from checkout.models import CheckoutSession, Transaction
from checkout.status_version import status_changed
from merchant.api import brand_for
from orders.models import Order
from orders.selectors import payment_seen, refund_target
from webhooks.kinds import EmailKind
from webhooks.models import NotificationEmail

RECEIPT_EMAIL = EmailKind.RECEIPT_COMPLETED
REFUND_EMAIL = EmailKind.RECEIPT_REFUNDED


def explorer_link(chain_id: int, tx_hash: str) -> str | None:
    chain = chain_get(chain_id)
    return f"{chain.explorer_url.rstrip('/')}/tx/{tx_hash}" if chain and chain.explorer_url else None


def success_redirect(session: CheckoutSession) -> str | None:
    url = session.success_url or (session.payment_link.return_url if session.payment_link else "")
    return url.replace("{SESSION_ID}", session.id) if url else None


def short_hash(value: str) -> str:
    """`0x1234ab…cdef90`: a hash or an address as people compare them (the whole value is copied)."""
    return f"{value[:8]}…{value[-6:]}" if value and len(value) > 20 else value


def _tx(label, chain_id: int, tx_hash: str, **extra: Any) -> dict[str, Any]:
    return {
        "label": label,
        "hash": tx_hash,
        "short": short_hash(tx_hash),
        "url": explorer_link(chain_id, tx_hash),
        **extra,
    }


# Why a payment went back, in the payer's words, by the first word of the order's error.
FAILURE_REASONS = {
    "SLIPPAGE": _("The exchange rate moved too far while your payment arrived, so it was not converted."),
    "NO_ROUTE": _("Your payment could not be converted into what %(merchant)s accepts."),
    "RELAY_UNAVAILABLE": _("Your payment could not be converted into what %(merchant)s accepts."),
    "RELAY_FAILED": _("Your payment could not be delivered to %(merchant)s."),
    "SWEEP_FAILED": _("Your payment could not be delivered to %(merchant)s."),
    "EXECUTION_INVALID": _("Your payment could not be delivered to %(merchant)s."),
    "EXECUTION_REVERTED": _("Your payment could not be delivered to %(merchant)s."),
    "REFUNDED_BY_STAFF": _("The payment service cancelled this payment."),
}


def failure_reason(session: CheckoutSession, order: Order, merchant: str) -> str:
    """Why the checkout failed, for the payer (never the service's internal words)."""
    code = (order.error_details or "").split(":", 1)[0].strip()
    if code in FAILURE_REASONS:
        return str(FAILURE_REASONS[code]) % {"merchant": merchant}
    if order.status_changes.filter(to_status=Order.Status.EXPIRED).exists():
        return str(_("The time to pay ran out before the whole amount arrived."))
    return str(_("The payment could not be completed."))


def _masked_email(address: str) -> str:
    local, _at, domain = address.partition("@")
    return f"{local[:1]}•••{local[-1:] if len(local) > 1 else ''}@{domain}"


def receipt_facts(session: CheckoutSession, order: Order) -> dict[str, Any]:
    """The receipt of a completed or refunded checkout (see the module's docstring)."""
    token = display_token(order.src_chain, order.src_token_address)
    decimals = token.decimals if token else 0
    chain = chain_get(order.src_chain)
    deposits = list(order.deposit_txs.filter(counted=True).order_by("created_at"))
    transactions = [_tx(_("Payment transaction"), tx.chain, tx.tx_hash) for tx in deposits]
    if not deposits and (seen := payment_seen(order)[1]):  # executed on first sight, counted later
        transactions = [_tx(_("Payment transaction"), order.src_chain, seen)]
    completed = session.status == CheckoutSession.Status.COMPLETED
    received = None
    if completed:
        transactions += [
            _tx(_("Delivery transaction"), tx.chain, tx.tx_hash)
            for tx in order.relay_txs.filter(status="success").order_by("created_at")
        ]
        delivered = (order.settlement or {}).get("actualDstAmount") or (order.settlement or {}).get(
            "dstAmount"
        )
        merchant_token = display_token(session.paid_on_chain, session.token_address)
        merchant_chain = chain_get(session.paid_on_chain)
        if delivered is not None and merchant_token is not None:
            received = {
                "amount": format_units(int(delivered), merchant_token.decimals),
                "symbol": merchant_token.symbol,
                "chain": merchant_chain.name if merchant_chain else str(session.chain_id),
            }
    refunded = list(
        order.refund_txs.filter(status="success").select_related("deposit").order_by("created_at")
    )
    refunds = []
    for tx in refunded:
        to = refund_target(order, tx.deposit) if tx.deposit is not None else ""
        refund_chain = chain_get(tx.chain)
        refunds.append(
            _tx(
                _("Refund transaction"),
                tx.chain,
                tx.tx_hash,
                amount=format_units(int(tx.amount), decimals),
                to=to,
                to_short=short_hash(to),
                chain=refund_chain.name if refund_chain else str(tx.chain),
            )
        )
    link = session.payment_link
    emailed = (
        session.customer_email
        and NotificationEmail.objects.filter(
            event__subject=session.id, event_type__startswith="receipt.", status__in=("pending", "sent")
        ).exists()
    )
    return {
        "amount": format_units(
            sum(int(tx.amount) for tx in deposits)
            or int((order.settlement or {}).get("srcAmountReceived") or 0),  # paid as seen, not counted yet
            decimals,
        ),
        "symbol": token.symbol if token else "",
        "chain": chain.name if chain else str(order.src_chain),
        "received": received,
        "reference": session.client_reference_id,
        "at": session.completed_at or order.filled_at or order.received_deposit_at,
        "transactions": transactions,
        "refunds": refunds,
        "merchant_refunds": _merchant_refunds(session),
        "refunded": format_units(sum(int(tx.amount) for tx in refunded), decimals) if refunded else None,
        "reason": None if completed else failure_reason(session, order, brand_for(session.merchant)["name"]),
        "emailed_to": _masked_email(session.customer_email) if emailed else None,
        "back_url": success_redirect(session) or (link.return_url if link else ""),
        "back_label": (link.return_label if link else "") or _("Back to the shop"),
        "again_url": reverse("pay-link", kwargs={"short_code": link.short_code})
        if link is not None and not completed and link.is_active
        else None,
        "url": f"{settings.PUBLIC_BASE_URL.rstrip('/')}/pay/s/{session.id}",
    }


def payer_email_queue(*, session: CheckoutSession, order: Order, event, kind: EmailKind) -> None:
    """Queue the payer's receipt (`kind` RECEIPT_EMAIL) or refund notice (REFUND_EMAIL) if the payer gave an
    email address; in the caller's transaction, in the language the payer's page was in."""
    from webhooks.notifications import queue

    if not session.customer_email:
        return
    with translation.override(session.locale or settings.LANGUAGE_CODE):
        context = {
            "receipt": receipt_facts(session, order),
            "brand": brand_for(
                session.merchant, session.payment_link.branding if session.payment_link else None
            ),
            "session": session,
            "refund": kind == REFUND_EMAIL,
        }
        subject = " ".join(render_to_string("pay/email/receipt_subject.txt", context).split())
        body = render_to_string("pay/email/receipt.txt", context)
    queue(
        organization=session.merchant,
        event=event,
        event_type=kind,
        to=session.customer_email,
        subject=subject[:200],
        body=body,
    )


MERCHANT_REFUND_EMAIL = EmailKind.RECEIPT_MERCHANT_REFUNDED


def merchant_refund_receipt(
    *,
    transaction_id: str,
    refund_id: str,
    amount: int,
    chain_id: int,
    token_address: str,
    to: str,
    tx_hash: str,
) -> None:
    """The merchant's refund `refund_id` reached the payer of `transaction_id`: its receipt shows it (what, on
    which chain, to which address, in which transaction). Once per refund; in the caller's transaction."""
    row = Transaction.objects.select_for_update().filter(pk=transaction_id).first()
    if row is None or any(paid.get("refund") == refund_id for paid in row.refunds_paid):
        return
    paid = {
        "refund": refund_id,
        "amount": str(amount),
        "chain_id": chain_id,
        "token_address": token_address,
        "to": to,
        "tx_hash": tx_hash,
    }
    Transaction.objects.filter(pk=row.pk).update(refunds_paid=[*row.refunds_paid, paid])
    if row.session_id:
        status_changed(row.session_id)  # the page keeps what it rendered per version: a new one shows it


def _merchant_refunds(session: CheckoutSession) -> list[dict[str, Any]]:
    """The merchant's refunds the payer holds, as the receipt lists them."""
    row = Transaction.objects.filter(session=session).only("refunds_paid").first()
    shown = []
    for paid in row.refunds_paid if row is not None else []:
        token = display_token(paid["chain_id"], paid["token_address"])
        chain = chain_get(paid["chain_id"])
        shown.append(
            _tx(
                _("Refund transaction"),
                paid["chain_id"],
                paid["tx_hash"],
                amount=format_units(int(paid["amount"]), token.decimals) if token else paid["amount"],
                symbol=token.symbol if token else paid["token_address"],
                chain=chain.name if chain else str(paid["chain_id"]),
                to=paid["to"],
                to_short=short_hash(paid["to"]),
            )
        )
    return shown


def merchant_refund_email_queue(
    *, transaction_id: str, amount: int, chain_id: int, token_address: str, to: str, tx_hash: str, event
) -> None:
    """Tell the payer of a checkout that the merchant refunded them (`amount` of the token they receive, on
    `chain_id`, in `tx_hash`), if the payer gave an email address; in the caller's transaction, in the language
    the payer's page was in."""
    from webhooks.notifications import queue

    session = (
        CheckoutSession.objects.select_related("organization", "payment_link")
        .filter(transactions__pk=transaction_id)
        .first()
    )
    if session is None or not session.customer_email:
        return
    token = display_token(chain_id, token_address)
    chain = chain_get(chain_id)
    with translation.override(session.locale or settings.LANGUAGE_CODE):
        context = {
            "brand": brand_for(
                session.merchant, session.payment_link.branding if session.payment_link else None
            ),
            "amount": format_units(amount, token.decimals) if token else str(amount),
            "symbol": token.symbol if token else token_address,
            "chain": chain.name if chain else str(chain_id),
            "to": to,
            "tx": _tx(_("Refund transaction"), chain_id, tx_hash),
            "url": f"{settings.PUBLIC_BASE_URL.rstrip('/')}/pay/s/{session.id}",
        }
        subject = " ".join(render_to_string("pay/email/merchant_refund_subject.txt", context).split())
        body = render_to_string("pay/email/merchant_refund.txt", context)
    queue(
        organization=session.merchant,
        event=event,
        event_type=MERCHANT_REFUND_EMAIL,
        to=session.customer_email,
        subject=subject[:200],
        body=body,
    )
