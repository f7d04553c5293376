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
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from chains.registry import chain_get
from checkout.display import display_token, format_units
from checkout.models import PlatformCheckoutSession
from merchant.branding import brand_for
from orders.models import Order

RECEIPT_EMAIL = "receipt.completed"
REFUND_EMAIL = "receipt.refunded"


def explorer_link(chain_id: int, tx_hash: str) -> str | None:
    chain = chain_get(chain_id)
    return f"{chain.explorer_url.rstrip('/')}/tx/{tx_hash}" if chain and chain.explorer_url else None


def success_redirect(session: PlatformCheckoutSession) -> str | None:
    url = session.success_url or (session.payment_link.return_url if session.payment_link else "")
    return url.replace("{SESSION_ID}", session.id) if url else None


def receipt_facts(session: PlatformCheckoutSession, order: Order) -> dict[str, Any]:
    """The receipt of a completed or refunded checkout (see the module's docstring)."""
    token = display_token(order.src_chain, order.src_token_address)
    decimals = token.decimals if token else 0
    chain = chain_get(order.src_chain)
    deposits = list(order.deposit_txs.filter(counted=True).order_by("created_at"))
    transactions = [
        {"label": _("Payment transaction"), "hash": tx.tx_hash, "url": explorer_link(tx.chain, tx.tx_hash)}
        for tx in deposits
    ]
    if session.status == PlatformCheckoutSession.Status.COMPLETED:
        transactions += [
            {
                "label": _("Delivery transaction"),
                "hash": tx.tx_hash,
                "url": explorer_link(tx.chain, tx.tx_hash),
            }
            for tx in order.relay_txs.filter(status="success").order_by("created_at")
        ]
    refunded = list(order.refund_txs.filter(status="success").order_by("created_at"))
    refunds = [
        {
            "label": _("Refund transaction"),
            "hash": tx.tx_hash,
            "url": explorer_link(tx.chain, tx.tx_hash),
            "amount": format_units(int(tx.amount), decimals),
        }
        for tx in refunded
    ]
    link = session.payment_link
    return {
        "amount": format_units(sum(int(tx.amount) for tx in deposits), decimals),
        "symbol": token.symbol if token else "",
        "chain": chain.name if chain else str(order.src_chain),
        "reference": session.client_reference_id,
        "at": session.completed_at or order.filled_at or order.received_deposit_at,
        "transactions": transactions,
        "refunds": refunds,
        "refunded": format_units(sum(int(tx.amount) for tx in refunded), decimals) if refunded else None,
        "back_url": success_redirect(session) or (link.return_url if link else ""),
        "back_label": (link.return_label if link else "") or _("Back to the shop"),
        "url": f"{settings.PUBLIC_BASE_URL.rstrip('/')}/pay/s/{session.id}",
    }


def payer_email_queue(*, session: PlatformCheckoutSession, order: Order, event, kind: str) -> None:
    """Queue the payer's receipt (`kind` RECEIPT_EMAIL) or refund notice (REFUND_EMAIL) if the payer gave an
    email address; in the caller's transaction, in the language the payer's page was in."""
    from webhooks.notifications import queue

    if not session.customer_email:
        return
    with translation.override(session.locale or settings.LANGUAGE_CODE):
        context = {
            "receipt": receipt_facts(session, order),
            "brand": brand_for(
                session.organization, session.payment_link.branding if session.payment_link else None
            ),
            "session": session,
            "refund": kind == REFUND_EMAIL,
        }
        subject = " ".join(render_to_string("pay/email/receipt_subject.txt", context).split())
        body = render_to_string("pay/email/receipt.txt", context)
    queue(
        organization=session.organization,
        event=event,
        event_type=kind,
        to=session.customer_email,
        subject=subject[:200],
        body=body,
    )
