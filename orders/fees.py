"""Fee arithmetic (feeVersion 1), and the two inputs it reads from the chains (at the end).

The arithmetic is pure functions over integers and Decimals; every threshold is a setting.

Rounding: basis points and token amounts are integers. Discounted basis points
and fee amounts are rounded down (in the payer's favour); amounts after fees
are floored and never below zero.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from django.conf import settings

from chains.readers import ChainUnavailable, get_chain_reader
from chains.tokens import amount_usd, token_get

logger = logging.getLogger(__name__)

BPS = 10_000
FEE_VERSION = 1
USDC_DECIMALS = 6

# The fee schedule of feeVersion 1 is the operator's (settings FEE_TIERS_USD, FEE_TOP_TIER_BPS,
# WHALE_DISCOUNT_TIERS, CARD_VENDOR_FEE_BPS, CARD_VENDOR_FEE_USD, CARD_SERVICE_FEE_USD), read at each use.
DISCOUNT_TOKEN_DECIMALS = 18
# Points: one per whole USD of order value, multiplied for discount-token holders: (tokens held, multiplier).
POINTS_PER_USD = 1
POINTS_MULTIPLIER_TIERS = [(100_000, 2), (1_000_000, 3)]


def service_fee_bps(usd_value: Decimal) -> int:
    """Base fee for an order worth `usd_value`: the first tier whose bound it is under."""
    for bound, bps in settings.FEE_TIERS_USD:
        if usd_value < Decimal(bound):
            return bps
    return settings.FEE_TOP_TIER_BPS


def whale_discount_bps(balance: int) -> int:
    """Share of the base fee waived (in bps of it) for the recipient's discount-token balance (smallest unit)."""
    unit = 10**DISCOUNT_TOKEN_DECIMALS
    discount = 0
    for threshold_tokens, bps in settings.WHALE_DISCOUNT_TIERS:
        if balance >= threshold_tokens * unit:
            discount = max(discount, bps)
    return discount


def discounted_bps(base_bps: int, discount_bps: int) -> int:
    return base_bps * (BPS - discount_bps) // BPS


def fee_amount(amount: int, bps: int) -> int:
    """The fee on `amount` at `bps`, rounded down."""
    return amount * bps // BPS


def amount_before_fee_added(total: int, bps: int) -> int:
    """The `amount` whose `amount + fee_amount(amount, bps)` is `total` (an exact-output quote's input
    before its fee); the sum grows by at least 1 per unit, so there is one such amount at most."""
    amount = total * BPS // (BPS + bps)
    while amount + fee_amount(amount, bps) < total:
        amount += 1
    return amount


def gross_for_net(net: int, bps: int) -> int:
    """The smallest `gross` whose `gross - fee_amount(gross, bps)` is at least `net`: what to ask so that
    what is left after the fee is `net` exactly (the fee rounds down, so asking more leaves more)."""
    if net <= 0:
        return 0
    # gross - floor(gross * bps / BPS) >= net  <=>  gross * (BPS - bps) / BPS > net - 1
    return (net - 1) * BPS // (BPS - bps) + 1


@dataclass(frozen=True)
class StandardFee:
    token_to_check_balance: str
    recipient_balance: int
    service_fee_bps: int
    service_whale_discount_bps: int
    final_fee_bps: int

    def as_dict(self) -> dict:
        return {
            "type": "standard_fee",
            "feeVersion": FEE_VERSION,
            "tokenToCheckBalance": self.token_to_check_balance,
            "recipientBalance": str(self.recipient_balance),
            "serviceFeeBps": self.service_fee_bps,
            "serviceWhaleDiscountBps": self.service_whale_discount_bps,
            "servicePartnerDiscountBps": 0,
            "finalFeeBps": self.final_fee_bps,
        }


def standard_fee(*, usd_value: Decimal, recipient_balance: int) -> StandardFee:
    base = service_fee_bps(usd_value)
    discount = whale_discount_bps(recipient_balance)
    return StandardFee(
        token_to_check_balance=settings.DISCOUNT_TOKEN_ADDRESS,
        recipient_balance=recipient_balance,
        service_fee_bps=base,
        service_whale_discount_bps=discount,
        final_fee_bps=discounted_bps(base, discount),
    )


@dataclass(frozen=True)
class CardFee:
    standard: StandardFee
    vendor_fee_bps: int
    vendor_fee_usd: Decimal
    service_fee_usd: Decimal
    original_amount: int
    final_amount: int

    @property
    def final_fee_bps(self) -> int:
        return self.vendor_fee_bps + self.standard.final_fee_bps

    @property
    def final_fee_usd(self) -> Decimal:
        return self.vendor_fee_usd + self.service_fee_usd

    def as_dict(self) -> dict:
        return {
            "type": "vendorBweb2_fee",
            "feeVersion": FEE_VERSION,
            "tokenToCheckBalance": self.standard.token_to_check_balance,
            "recipientBalance": str(self.standard.recipient_balance),
            "vendorBFeeBps": self.vendor_fee_bps,
            "vendorBFeeUsd": float(self.vendor_fee_usd),
            "serviceFeeBps": self.standard.service_fee_bps,
            "serviceFeeUsd": float(self.service_fee_usd),
            "serviceWhaleDiscountBps": self.standard.service_whale_discount_bps,
            "servicePartnerDiscountBps": 0,
            "finalFeeBps": self.final_fee_bps,
            "finalFeeUsd": float(self.final_fee_usd),
            "originalAmount": str(self.original_amount),
            "finalAmount": str(self.final_amount),
        }


def usd_to_usdc_units(usd: Decimal) -> int:
    return int((usd * 10**USDC_DECIMALS).to_integral_value(rounding=ROUND_CEILING))


def card_fee(*, original_amount: int, usd_value: Decimal, recipient_balance: int) -> CardFee:
    """vendorB card payment: `finalAmount = original * (1 - (vendor + service bps)/10000) - fixed fees`.

    `original_amount` is in USDC units (6 decimals).
    """
    standard = standard_fee(usd_value=usd_value, recipient_balance=recipient_balance)
    vendor_bps = settings.CARD_VENDOR_FEE_BPS
    vendor_usd = Decimal(settings.CARD_VENDOR_FEE_USD)
    service_usd = Decimal(settings.CARD_SERVICE_FEE_USD)
    total_bps = vendor_bps + standard.final_fee_bps
    fixed_units = usd_to_usdc_units(vendor_usd + service_usd)
    after_percent = original_amount * (BPS - total_bps) // BPS
    final_amount = max(0, after_percent - fixed_units)
    return CardFee(
        standard=standard,
        vendor_fee_bps=vendor_bps,
        vendor_fee_usd=vendor_usd,
        service_fee_usd=service_usd,
        original_amount=original_amount,
        final_amount=final_amount,
    )


def points_for(*, usd_value: Decimal, recipient_balance: int) -> tuple[int, int]:
    """Points for an order: `floor(usd_value * POINTS_PER_USD) * multiplier`, and the multiplier.

    The multiplier is 1, or the highest whale tier's multiplier the recipient reaches.
    """
    unit = 10**DISCOUNT_TOKEN_DECIMALS
    multiplier = 1
    for threshold_tokens, tier_multiplier in POINTS_MULTIPLIER_TIERS:
        if recipient_balance >= threshold_tokens * unit:
            multiplier = max(multiplier, tier_multiplier)
    base = int(max(usd_value, Decimal(0)) * POINTS_PER_USD)
    return base * multiplier, multiplier


# --- what the fee depends on, read from the chains ---------------------------------


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


@dataclass(frozen=True)
class FeeSchedule:
    """The schedule in force, as merchants read it (the dashboard's Settings page)."""

    tiers: list[tuple[str, str]]  # (order value, fee), e.g. ("under $10", "1.20 %")
    discounts: list[tuple[str, str]]  # (discount tokens held, share of the fee waived)
    card: str


def _percent(bps: int) -> str:
    return f"{Decimal(bps) / 100:.2f} %"


def fee_schedule() -> FeeSchedule:
    tiers = [(f"under ${bound:,}", _percent(bps)) for bound, bps in settings.FEE_TIERS_USD]
    last = settings.FEE_TIERS_USD[-1][0]
    tiers.append((f"${last:,} and more", _percent(settings.FEE_TOP_TIER_BPS)))
    discounts = [(f"{tokens:,}", _percent(bps)) for tokens, bps in settings.WHALE_DISCOUNT_TIERS]
    fixed = Decimal(settings.CARD_VENDOR_FEE_USD) + Decimal(settings.CARD_SERVICE_FEE_USD)
    card = f"{_percent(settings.CARD_VENDOR_FEE_BPS)} + ${fixed:.2f} to the card processor and the service"
    return FeeSchedule(tiers=tiers, discounts=discounts, card=card)
