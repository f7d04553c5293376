"""Onramp use cases: vendorB support checks, what an order needs from its onramp vendor, vendorB's webhooks."""

from __future__ import annotations

import logging
import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from django.conf import settings
from django.db import transaction

from chains.models import Token
from chains.tokens import token_get
from core.errors import InvalidRequest
from core.geo import Location
from onramp.models import VendorBEvent
from onramp.vendor_a import VendorAClient, map_buy_options
from onramp.vendor_b import VendorBClient, WebhookRejected, is_configured, webhook_event
from orders import fees
from orders.inputs import OrderRequest
from orders.models import Order
from orders.services import enqueue_settlement, order_record_card_payment

# vendorA's network names for the chains the service settles on.
VENDOR_A_NETWORKS = {
    1: "ethereum",
    10: "optimism",
    56: "bnb-chain",
    137: "polygon",
    8453: "base",
    42161: "arbitrum",
    43114: "avalanche-c-chain",
}
CENT = Decimal("0.01")

logger = logging.getLogger(__name__)


def usd(value: Decimal) -> str:
    return f"${value.quantize(CENT, rounding=ROUND_FLOOR):,.2f}"


def vendor_b_support(*, location: Location, usd_amount: Decimal | None) -> dict[str, Any]:
    """Whether vendorB's crypto onramp and card payments work for this caller (and amount).

    A service without vendorB answers "not supported" rather than an error: a
    front end asks this before it shows the card option, and simply hides it.
    """
    if not is_configured():
        return {"stripeOnramp": False, "stripeWeb2": {"isSupport": False}}
    region = f"{location.country}-{location.region}" if location.country and location.region else None
    in_region = (
        location.country in settings.VENDOR_B_SUPPORTED_COUNTRIES
        and region not in settings.VENDOR_B_EXCLUDED_REGIONS
    )
    if usd_amount is None:
        return {"stripeOnramp": in_region, "stripeWeb2": {"isSupport": in_region}}
    within_limits = Decimal(settings.VENDOR_B_MIN_USD) <= usd_amount <= Decimal(settings.VENDOR_B_MAX_USD)
    card = fees.card_fee(
        original_amount=fees.usd_to_usdc_units(usd_amount), usd_value=usd_amount, recipient_balance=0
    )
    onramp_usd = Decimal(card.final_amount).scaleb(-fees.USDC_DECIMALS)
    return {
        "stripeOnramp": in_region,
        "stripeWeb2": {
            "isSupport": in_region and within_limits,
            "formattedTotalUsd": usd(usd_amount),
            "formattedOnrampUsd": usd(onramp_usd),
            "formattedFeeUsd": usd(usd_amount - onramp_usd.quantize(CENT, rounding=ROUND_FLOOR)),
        },
    }


def _src_token(request: OrderRequest) -> Token | None:
    return token_get(chain_id=request.src_chain, address=request.src_token_address)


def _vendor_a_extras(
    *, order_id: str, global_address: str, request: OrderRequest, payer_ip: str, usd_value: Decimal
) -> dict:
    onramp = request.onramp or {}
    network = VENDOR_A_NETWORKS.get(request.src_chain)
    if network is None:
        raise InvalidRequest(f"vendorA does not serve chain {request.src_chain}.", field="onramp.vendor")
    client = VendorAClient()
    symbol = request.metadata["srcToken"]["symbol"]
    token = client.session_token(
        destination_address=global_address, blockchains=[network], assets=[symbol], client_ip=payer_ip
    )
    url = client.hosted_url(
        session_token=token["token"],
        defaultAsset=symbol,
        defaultNetwork=network,
        presetFiatAmount=str(usd_value.quantize(CENT, rounding=ROUND_CEILING)) if usd_value > 0 else None,
        fiatCurrency="USD",
        defaultPaymentMethod=onramp.get("paymentMethod"),
        redirectUrl=onramp.get("redirectUrl"),
        partnerUserRef=order_id,
    )
    return {"one_click_buy_url": url}


def card_charge_cents(
    *, needed_units: int, usd_value: Decimal, recipient_balance: int
) -> tuple[int, fees.CardFee]:
    """The smallest card charge (in cents) whose amount after card and service fees covers `needed_units` of USDC."""
    standard = fees.standard_fee(usd_value=usd_value, recipient_balance=recipient_balance)
    total_bps = settings.CARD_VENDOR_FEE_BPS + standard.final_fee_bps
    fixed = fees.usd_to_usdc_units(
        Decimal(settings.CARD_VENDOR_FEE_USD) + Decimal(settings.CARD_SERVICE_FEE_USD)
    )
    cents = math.ceil((needed_units + fixed) * fees.BPS / (fees.BPS - total_bps) / 10**4)
    while True:
        card = fees.card_fee(
            original_amount=cents * 10**4, usd_value=usd_value, recipient_balance=recipient_balance
        )
        if card.final_amount >= needed_units:
            return cents, card
        cents += 1  # integer rounding left it a cent short


def _vendor_b_card_extras(*, order_id: str, request: OrderRequest, recipient_balance: int) -> dict:
    token = _src_token(request)
    if token is None or token.symbol != "USDC":
        raise InvalidRequest(
            "card payments settle in USDC; use the USDC of the source chain.", field="srcTokenAddress"
        )
    client = VendorBClient()
    usd_value = Decimal(request.src_amount).scaleb(-token.decimals)
    cents, card = card_charge_cents(
        needed_units=request.src_amount, usd_value=usd_value, recipient_balance=recipient_balance
    )
    if not Decimal(settings.VENDOR_B_MIN_USD) <= Decimal(cents) / 100 <= Decimal(settings.VENDOR_B_MAX_USD):
        raise InvalidRequest(
            f"card payments must charge between ${settings.VENDOR_B_MIN_USD} and ${settings.VENDOR_B_MAX_USD}.",
            field="srcAmount",
        )
    intent_id = client.create_payment_intent(amount_cents=cents, order_id=order_id)
    return {
        "vendor_b_payment_intent_id": intent_id,
        "status": Order.Status.WAITING_STRIPE_PAYMENT,
        "fee": card.as_dict(),
        "onramp_metadata": {"vendorBAmountInCents": cents},
    }


def onramp_extras(
    *,
    order_id: str,
    global_address: str,
    request: OrderRequest,
    payer_ip: str,
    usd_value: Decimal,
    recipient_balance: int,
) -> dict:
    """What the order's onramp vendor adds to it (URLs, payment intent, status, fee). Calls the vendor."""
    vendor = request.onramp["vendor"] if request.onramp else "none"
    if vendor == "vendorA":
        return _vendor_a_extras(
            order_id=order_id,
            global_address=global_address,
            request=request,
            payer_ip=payer_ip,
            usd_value=usd_value,
        )
    if vendor == "vendorB-web2":
        return _vendor_b_card_extras(order_id=order_id, request=request, recipient_balance=recipient_balance)
    return {}


# --- vendorA helpers behind the /onramp/vendorA endpoints ------------------------------

DIRECT_URL_OPTIONS = (
    "presetFiatAmount",
    "fiatCurrency",
    "defaultAsset",
    "defaultPaymentMethod",
    "redirectUrl",
)


def vendor_a_session_token(
    *, destination_address: str, blockchains: list[str], assets: list[str] | None, client_ip: str
) -> dict:
    return VendorAClient().session_token(
        destination_address=destination_address, blockchains=blockchains, assets=assets, client_ip=client_ip
    )


def vendor_a_onramp_url(*, data: dict, client_ip: str) -> dict:
    """A hosted buy URL for an order; the session token is returned too when asked for."""
    client = VendorAClient()
    token = client.session_token(
        destination_address=data["destinationAddress"],
        blockchains=data["blockchains"],
        assets=None,
        client_ip=client_ip,
    )["token"]
    url = client.hosted_url(
        session_token=token,
        defaultAsset=data["defaultAsset"],
        defaultNetwork=data["blockchains"][0],
        presetFiatAmount=data["presetFiatAmount"],
        fiatCurrency=data["fiatCurrency"],
        defaultPaymentMethod=data["defaultPaymentMethod"],
        redirectUrl=data["redirectUrl"],
        partnerUserRef=data["orderId"],
    )
    return {"url": url, "sessionToken": token} if data["useSessionToken"] else {"url": url}


def vendor_a_direct_url(*, data: dict, client_ip: str) -> dict:
    client = VendorAClient()
    token = client.session_token(
        destination_address=data["destinationAddress"],
        blockchains=data["blockchains"],
        assets=data.get("assets"),
        client_ip=client_ip,
    )["token"]
    options = {name: data.get(name) for name in DIRECT_URL_OPTIONS}
    url = client.hosted_url(session_token=token, defaultNetwork=data["blockchains"][0], **options)
    return {"url": url, "sessionToken": token}


def vendor_a_options(
    *, country: str, subdivision: str | None, chain_ids: list[str] | None, payment_method: str | None
) -> dict:
    raw = VendorAClient().buy_options(country=country, subdivision=subdivision)
    return map_buy_options(raw, chain_ids=chain_ids, payment_method=payment_method)


def vendor_b_webhook(*, body: bytes, signature: str) -> str:
    """Handle one signed vendorB webhook; what was done, in a few words. Replays change nothing.

    `payment_intent.succeeded` pays the card order that owns the intent (the
    vault fronts its USDC) and starts its settlement; other events are
    acknowledged and ignored: a declined card may be tried again until the
    order expires.
    """
    try:
        event = webhook_event(body, signature)
    except WebhookRejected as exc:
        raise InvalidRequest(f"vendorB webhook refused: {exc}.") from None
    data = event.get("data")
    intent = data.get("object") if isinstance(data, dict) else None
    intent_id = str(intent["id"]) if isinstance(intent, dict) and isinstance(intent.get("id"), str) else ""
    with transaction.atomic():
        _, created = VendorBEvent.objects.get_or_create(
            event_id=event["id"][:255],
            defaults={"type": event["type"][:100], "payment_intent_id": intent_id[:255]},
        )
        if not created:
            return "already handled"
        if event["type"] != "payment_intent.succeeded" or not intent_id:
            return "ignored"
        order = order_record_card_payment(payment_intent_id=intent_id)
        if order is None:
            logger.warning("vendorB webhook %s: no order has payment intent %s", event["id"], intent_id)
            return "no such payment intent"
        enqueue_settlement(order.pk)
    return "card payment recorded"
