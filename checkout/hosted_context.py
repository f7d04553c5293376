"""What the hosted pages show, built from their rows: a link's page, a session's page and status (its items,
amounts, the wallet's facts, the summary), so the views in checkout.hosted only read the request, write
through the services and render."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from django.utils.translation import gettext as _

from chains.evm import ZERO_ADDRESS
from chains.registry import chain_get
from checkout import payments, sessions
from checkout.display import (
    display_token,
    format_units,
    luminance,
    payable_tokens,
    payment_uri,
    qr_svg,
    wallet_add_chain,
    wallet_messages,
)
from checkout.hosted_form import ADDRESS_PARTS
from checkout.models import CheckoutSession, PaymentLink
from checkout.page_cache import parts
from checkout.receipts import receipt_facts, success_redirect
from merchant.api import DEFAULT_ACCENT, brand_for
from orders.fees import fee_amount
from orders.models import Order

logger = logging.getLogger(__name__)


def address_labels() -> dict[str, str]:
    return {
        "line1": _("Address"),
        "line2": _("Address line 2"),
        "city": _("City"),
        "state": _("State or region"),
        "zip": _("Postal code"),
        "country": _("Country"),
    }


def page_context(link: PaymentLink | None, session: CheckoutSession | None) -> dict[str, Any]:
    source = link or (session.payment_link if session else None)
    widget = session.widget if session and session.widget_id else None  # a session a widget started
    organization = session.organization if session else link.organization  # type: ignore[union-attr]
    brand = brand_for(organization, source.branding if source else None)
    accent = (
        (
            source.theme_color
            if source and source.theme_color
            else (widget.theme or {}).get("primary_color")
            if widget
            else None
        )
        or brand["color"]
        or DEFAULT_ACCENT
    )
    chain_id = session.chain_id if session else link.chain_id  # type: ignore[union-attr]
    token_address = session.token_address if session else link.token_address  # type: ignore[union-attr]
    token = display_token(chain_id, token_address)
    decimals = token.decimals if token else 0
    chain = chain_get(chain_id)
    fixed = session.amount if session and session.amount is not None else (source.amount if source else None)
    return {
        "link": source,
        "session": session,
        "token": token,
        "chain_name": chain.name if chain else str(chain_id),
        "fixed_amount": format_units(int(fixed), decimals) if fixed is not None else None,
        "bounds": {
            name: format_units(int(value), decimals)
            for name in ("min_amount", "max_amount", "suggested_amount")
            if source and (value := getattr(source, name)) is not None
        },
        # Read when a page shows them (a form sent with no error shows none), once per version of the link.
        "items": SimpleLazyObject(lambda: items_of(source, decimals)) if source else [],
        "form_fields": (source.form_schema or {}).get("fields", []) if source else [],
        "shipping_options": [
            {**option, "display": format_units(int(option["amount"]), decimals)}
            for option in (source.shipping_options if source else [])
        ],
        "collect_shipping_address": bool(source and source.collect_shipping_address),
        "address_parts": ADDRESS_PARTS,
        "address_labels": address_labels(),
        # A test-mode organization's payer picks among test chains only (platform_api.testmode).
        "pay_with": payable_tokens(test_mode=not organization.livemode),
        "test_mode": not organization.livemode,
        "title": source.name if source else widget.name if widget else _("Checkout"),
        "theme_color": accent,
        "on_accent": "#111111" if luminance(accent) > 0.4 else "#ffffff",
        # The model's default label is said in the payer's language; a merchant's own stays as written.
        "button_text": source.button_text if source and source.button_text != "Pay" else _("Pay"),
        "business_name": brand["name"],
        "brand": brand,
    }


def items_of(link: PaymentLink, decimals: int) -> list[dict[str, Any]]:
    """The link's line items as its pages show them; each process keeps them for the link's `updated_at`, which
    every edit of an item moves (checkout.links)."""

    def read() -> list[dict[str, Any]]:
        return [
            {
                "name": i.name,
                "quantity": i.quantity,
                "description": i.description,
                "amount": format_units(int(i.amount), decimals),
            }
            for i in link.items.all()
        ]

    return parts.get(("items", link.pk, link.updated_at, decimals), read)


def status_context(
    session: CheckoutSession, order: Order | None, received: int | None = None
) -> dict[str, Any]:
    context = page_context(None, session)
    status = payments.session_status_data(session, order, received)
    if order is not None:
        token = display_token(order.src_chain, order.src_token_address)
        decimals = token.decimals if token else 0
        chain = chain_get(order.src_chain)
        context |= {
            "order": order,
            "pay_token": token,
            "pay_chain": chain,
            "pay_amount": format_units(int(order.src_amount), decimals),
            "remaining": format_units(int(status["order"]["remaining"]), decimals),
            "received": format_units(int(status["order"]["received"]), decimals),
            "qr_svg": qr_svg(payment_uri(order, int(status["order"]["remaining"]) or int(order.src_amount))),
            "summary": summary_of(session, order, context, token),
            "wallet": wallet_data(session, order, token, chain),
            "devnet_wallet": bool(chain and chain.devnet and settings.DEVELOPMENT),
        }
    return context | {
        "status": status,
        "success_url": success_redirect(session),
        "now_ms": int(timezone.now().timestamp() * 1000),
        # A receipt for what happened to money: a completed or failed checkout, and an expired one that
        # had received part of its price (sent back: where to, on which chain, with the hash).
        "receipt": receipt_facts(session, order)
        if order
        and (
            session.status in ("completed", "failed")
            or (session.status == "expired" and order.deposit_txs.filter(counted=True).exists())
        )
        else None,
        "again_url": reverse("pay-link", kwargs={"short_code": session.payment_link.short_code})
        if session.status in ("expired", "failed") and session.payment_link and session.payment_link.is_active
        else None,
    }


def wallet_data(session: CheckoutSession, order: Order, token, chain) -> dict[str, Any] | None:
    """What the page's wallet script (checkout/static/checkout/wallet.js) needs: the payment's chain, token,
    deposit address and decimals, and the sentences it may show. A devnet's chain may be added to the wallet
    with its own RPC URL; another chain's RPC URLs may hold provider keys and are never shown."""
    if (
        chain is None
        or token is None
        or session.status != "open"
        or order.status != Order.Status.SCANNING_DEPOSIT
    ):
        return None
    add_chain = wallet_add_chain(chain)
    return {
        "sessionId": session.id,
        "statusUrl": reverse("pay-status", kwargs={"session_id": session.id}),
        "chainId": chain.chain_id,
        "chainName": chain.name,
        "nativeSymbol": chain.native_symbol,
        "token": order.src_token_address,
        "native": order.src_token_address.lower() == ZERO_ADDRESS,
        "deposit": order.global_address,
        "decimals": token.decimals,
        "symbol": token.symbol,
        "explorerUrl": chain.explorer_url or "",
        "waitingStatus": Order.Status.SCANNING_DEPOSIT,
        "addChain": add_chain,
        "messages": wallet_messages(),
        # A token that takes EIP-3009: the payer may sign instead of sending (no native coin needed), and the
        # service submits it (facilitator.views.checkout_authorization).
        "signature": {
            "name": token.eip712_name,
            "version": token.eip712_version,
            "url": reverse("x402-checkout-authorization", kwargs={"session_id": session.id}),
            "validSeconds": 600,
        }
        if token.eip3009
        else None,
    }


def summary_of(session: CheckoutSession, order: Order, context: dict[str, Any], pay_token) -> dict:
    """The pay step's breakdown: the items, subtotal, discount and shipping in the merchant's token, their
    price, the service fee when the payer carries it, and last the total: what the payer sends, in theirs."""
    token = context["token"]
    decimals = token.decimals if token else 0
    pay_decimals = pay_token.decimals if pay_token else 0
    shipping = session.shipping_option or None
    discount = int(session.discount_amount or 0)
    link = session.payment_link
    fee = 0
    if link is not None and link.fee_on_top:
        fee = fee_amount(int(order.src_amount), int((order.fee or {}).get("finalFeeBps") or 0))
    subtotal = sessions.session_subtotal(session) if session.amount is not None else None
    return {
        "symbol": token.symbol if token else "",
        "subtotal": format_units(subtotal, decimals)
        if subtotal is not None and (discount or shipping)
        else None,
        "discount": format_units(discount, decimals) if discount else None,
        "discount_code": session.discount_code.code if session.discount_code_id and discount else "",
        "shipping": {
            "name": shipping.get("name", ""),
            "amount": format_units(int(shipping["amount"]), decimals),
        }
        if shipping
        else None,
        # What the merchant asks, in their token; the total to pay (the last row) is `pay_amount`.
        "price": format_units(int(session.amount), decimals) if session.amount is not None else None,
        "fee": format_units(fee, pay_decimals) if fee else None,
        "same_token": bool(
            token
            and pay_token
            and order.src_chain == session.chain_id
            and order.src_token_address.lower() == session.token_address.lower()
        ),
    }
