"""POST /orders/quote: price the trade through the quote provider, then add fees and points."""

from __future__ import annotations

import logging
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from django.conf import settings

from chains.registry import chain_get
from chains.tokens import check_amount_worth
from core.errors import InvalidRequest, UpstreamError
from orders import fees
from orders.fees import recipient_discount_balance
from orders.inputs import EXACT_INPUT, EXACT_OUTPUT, QuoteInput
from orders.providers import (
    ProviderUnavailable,
    QuoteRejected,
    QuoteRequest,
    get_quote_provider,
)
from orders.types import CALLS_CONTRACT

logger = logging.getLogger(__name__)


def _decimal(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal(0)


def _rescale(currency: dict[str, Any], new_amount: int) -> dict[str, Any]:
    """The same currency block for another amount (formatted and USD figures follow)."""
    old_amount = int(currency["amount"])
    decimals = int(currency["currency"]["decimals"])
    scaled = dict(currency)
    scaled["amount"] = str(new_amount)
    scaled["amountFormatted"] = (
        format(Decimal(new_amount).scaleb(-decimals).normalize(), "f") if new_amount else "0"
    )
    if old_amount and "amountUsd" in currency:
        usd = _decimal(currency["amountUsd"]) * Decimal(new_amount) / Decimal(old_amount)
        scaled["amountUsd"] = str(usd.quantize(Decimal("0.01")))
    return scaled


def _impact_and_rate(currency_in: dict[str, Any], currency_out: dict[str, Any]) -> dict[str, Any]:
    """`rate` (output per unit of input) and `totalImpact` (what the payer loses, in USD and per cent of what
    goes in) of the amounts as quoted: after the service's fee, so a fee shows as impact. `swapImpact`
    stays the provider's: the trade's own impact, before the fee."""
    figures: dict[str, Any] = {}
    amount_in, amount_out = (
        _decimal(currency_in["amountFormatted"]),
        _decimal(currency_out["amountFormatted"]),
    )
    if amount_in > 0:
        with localcontext() as context:
            context.prec = 18
            figures["rate"] = format((amount_out / amount_in).normalize(), "f")
    if "amountUsd" in currency_in and "amountUsd" in currency_out:
        usd_in, usd_out = _decimal(currency_in["amountUsd"]), _decimal(currency_out["amountUsd"])
        impact = usd_out - usd_in
        percent = impact * 100 / usd_in if usd_in > 0 else Decimal(0)
        figures["totalImpact"] = {"usd": _cents(impact), "percent": _cents(percent)}
    return figures


def _cents(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01")) + 0)  # + 0: never "-0.00"


def quote_build(ask: QuoteInput) -> tuple[dict[str, Any], str]:
    """The quote response and the name of the provider that priced it; 400 naming srcChain for a chain that
    takes no payments, as an order from it is refused."""
    source = chain_get(ask.src_chain)
    if source is None or not source.accepts_payments:
        raise InvalidRequest(
            f"payments are not taken on chain {ask.src_chain}: the service has no deposit factory there, so an "
            "order from it would be refused.",
            field="srcChain",
        )
    trade_type, amount, recipient = ask.trade_type, ask.amount, ask.recipient_address
    chain, token = (
        (ask.src_chain, ask.src_token_address)
        if trade_type == EXACT_INPUT
        else (ask.dst_chain, ask.dst_token_address)
    )
    check_amount_worth(chain_id=chain, address=token, amount=amount, field=ask.amount_field)
    provider = get_quote_provider()
    request = QuoteRequest(
        user=settings.RELAY_QUOTE_USER,
        recipient=recipient or settings.RELAY_QUOTE_USER,
        origin_chain_id=ask.src_chain,
        destination_chain_id=ask.dst_chain,
        origin_currency=ask.src_token_address,
        destination_currency=ask.dst_token_address,
        amount=amount,
        trade_type=trade_type,
    )
    try:
        details = provider.quote(request)
    except QuoteRejected as exc:
        raise InvalidRequest(f"No quote for this trade: {exc}") from exc
    except ProviderUnavailable as exc:
        logger.warning("Quote provider %s unavailable: %s", provider.name, exc)
        raise UpstreamError("The pricing service is unavailable; retry shortly.") from exc

    balance = recipient_discount_balance(recipient)
    usd_value = _decimal(
        details["currencyIn"].get("amountUsd") or details["currencyOut"].get("amountUsd") or 0
    )
    points, multiplier = fees.points_for(usd_value=usd_value, recipient_balance=balance)

    if ask.onramp_vendor == "vendorB-web2":
        fee = fees.card_fee(
            original_amount=fees.usd_to_usdc_units(usd_value), usd_value=usd_value, recipient_balance=balance
        ).as_dict()
    else:
        standard = fees.standard_fee(usd_value=usd_value, recipient_balance=balance)
        fee = standard.as_dict()
        # The payer's side carries the fee: more in for a fixed output, less out for a fixed input.
        if trade_type == EXACT_OUTPUT:
            amount_in = int(details["currencyIn"]["amount"])
            details["currencyIn"] = _rescale(
                details["currencyIn"], amount_in + fees.fee_amount(amount_in, standard.final_fee_bps)
            )
            details["currencyIn"]["minimumAmount"] = details["currencyIn"]["amount"]
        else:
            amount_out = int(details["currencyOut"]["amount"])
            minimum_out = int(details["currencyOut"].get("minimumAmount") or amount_out)
            details["currencyOut"] = _rescale(
                details["currencyOut"], amount_out - fees.fee_amount(amount_out, standard.final_fee_bps)
            )
            details["currencyOut"]["minimumAmount"] = str(
                minimum_out - fees.fee_amount(minimum_out, standard.final_fee_bps)
            )

    details.update(_impact_and_rate(details["currencyIn"], details["currencyOut"]))
    if ask.type in CALLS_CONTRACT:
        operation = "execute"
    else:
        operation = "swap" if ask.src_chain == ask.dst_chain else "bridge"
    return (
        {
            "operation": operation,
            "sender": settings.RELAY_QUOTE_USER,
            "recipient": recipient,
            **details,
            "pointsAmount": points,
            "pointsMultiplier": multiplier,
            "fee": fee,
        },
        provider.name,
    )


def expected_reachable(
    *,
    type: str,
    src_chain: int,
    dst_chain: int,
    src_token: str,
    dst_token: str,
    src_amount: int,
    expected: int,
) -> None:
    """400 naming payload.expectedDstAmount when `src_amount` does not buy `expected` now (after the fee, less
    the settlement's tolerance, SETTLEMENT_SLIPPAGE_BPS), by a fresh quote: such an order could only be
    refunded after the payer paid. A pricing service that does not answer lets the order through (its
    settlement checks the same rule against the price then)."""
    if not expected:
        return
    check_amount_worth(chain_id=src_chain, address=src_token, amount=src_amount, field="srcAmount")
    try:
        quote, _ = quote_build(
            QuoteInput(
                type=type,
                src_chain=src_chain,
                dst_chain=dst_chain,
                src_token_address=src_token,
                dst_token_address=dst_token,
                trade_type=EXACT_INPUT,
                amount=src_amount,
            )
        )
    except UpstreamError:
        return
    buys = int(quote["currencyOut"]["amount"])
    tolerance = settings.SETTLEMENT_SLIPPAGE_BPS
    if buys * 10_000 < expected * (10_000 - tolerance):
        raise InvalidRequest(
            f"expectedDstAmount {expected} is more than srcAmount {src_amount} buys now: {buys} after the fee "
            f"(a quote now; settlement allows {tolerance} bps less). Ask for at most {buys}, or pay more.",
            field="payload.expectedDstAmount",
        )
