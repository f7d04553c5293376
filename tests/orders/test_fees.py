"""Fee arithmetic (feeVersion 1): table checks and properties over the whole input space."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orders import fees

UNIT = 10**18
usd_values = st.decimals(min_value=0, max_value=10**9, places=2, allow_nan=False, allow_infinity=False)
balances = st.integers(min_value=0, max_value=10**9 * UNIT)
amounts = st.integers(min_value=0, max_value=2**256 - 1)


@pytest.mark.parametrize(
    ("usd", "bps"),
    [
        ("0", 120),
        ("9.99", 120),
        ("10", 80),
        ("499.99", 80),
        ("500", 60),
        ("4999.99", 60),
        ("5000", 40),
        ("49999.99", 40),
        ("50000", 28),
        ("10000000", 28),
    ],
)
def test_base_fee_tiers(usd, bps):
    assert fees.service_fee_bps(Decimal(usd)) == bps


@pytest.mark.parametrize(
    ("tokens", "discount"),
    [
        (0, 0),
        (99_999, 0),
        (100_000, 5000),
        (499_999, 5000),
        (500_000, 7500),
        (999_999, 7500),
        (1_000_000, 10000),
    ],
)
def test_whale_discount_tiers(tokens, discount):
    assert fees.whale_discount_bps(tokens * UNIT) == discount
    assert fees.whale_discount_bps(tokens * UNIT - 1 if tokens else 0) <= discount


def test_the_tiers_are_the_operators_settings(settings):
    settings.FEE_TIERS_USD = [(100, 50)]
    settings.FEE_TOP_TIER_BPS = 5
    assert fees.service_fee_bps(Decimal(99)) == 50
    assert fees.service_fee_bps(Decimal(100)) == 5
    schedule = fees.fee_schedule()
    assert schedule.tiers == [("under $100", "0.50 %"), ("$100 and more", "0.05 %")]


def test_the_default_schedule_is_the_documented_one():
    from django.conf import settings

    assert settings.FEE_TIERS_USD == [(10, 120), (500, 80), (5_000, 60), (50_000, 40)]
    assert (settings.FEE_TOP_TIER_BPS, settings.CARD_VENDOR_FEE_BPS, settings.CARD_VENDOR_FEE_USD) == (
        28,
        540,
        "0.30",
    )
    assert settings.WHALE_DISCOUNT_TIERS == [(100_000, 5_000), (500_000, 7_500), (1_000_000, 10_000)]


@pytest.mark.parametrize("raw", ["10:120,5:80", "10:12000", "ten:120", "0:120", "10:120,10:80"])
def test_a_schedule_that_does_not_parse_stops_the_service(monkeypatch, raw):
    from django.core.exceptions import ImproperlyConfigured

    from config.settings.env import parse_tiers

    monkeypatch.setenv("FEE_TIERS_USD", raw)
    with pytest.raises(ImproperlyConfigured, match="FEE_TIERS_USD"):
        parse_tiers("FEE_TIERS_USD", "10:120", high=10_000)


@given(usd=usd_values, balance=balances)
def test_final_bps_is_never_negative_nor_above_the_base(usd, balance):
    fee = fees.standard_fee(usd_value=usd, recipient_balance=balance)
    assert 0 <= fee.final_fee_bps <= fee.service_fee_bps
    assert fee.final_fee_bps == fee.service_fee_bps * (10_000 - fee.service_whale_discount_bps) // 10_000


@given(amount=amounts, usd=usd_values, balance=balances)
def test_fee_amount_is_never_negative_nor_above_the_base_fee(amount, usd, balance):
    fee = fees.standard_fee(usd_value=usd, recipient_balance=balance)
    charged = fees.fee_amount(amount, fee.final_fee_bps)
    assert 0 <= charged <= fees.fee_amount(amount, fee.service_fee_bps) <= amount
    # Rounded down: the exact fee is at most one smallest unit above what is charged.
    assert charged * 10_000 <= amount * fee.final_fee_bps < (charged + 1) * 10_000


@given(original=st.integers(min_value=0, max_value=10**15), usd=usd_values, balance=balances)
def test_card_final_amount_is_between_zero_and_the_original(original, usd, balance):
    fee = fees.card_fee(original_amount=original, usd_value=usd, recipient_balance=balance)
    assert 0 <= fee.final_amount <= original
    assert fee.final_fee_bps == 540 + fee.standard.final_fee_bps
    expected = original * (10_000 - fee.final_fee_bps) // 10_000 - 300_000
    assert fee.final_amount == max(0, expected)


def test_card_fee_example_from_design():
    # $100 card payment, 80 bps service fee, no discount: 100 * (1 - 6.2%) - 0.30 = 93.50 USDC
    fee = fees.card_fee(original_amount=100_000_000, usd_value=Decimal(100), recipient_balance=0)
    assert fee.final_amount == 93_500_000
    assert fee.as_dict()["finalFeeUsd"] == 0.3


@given(usd=usd_values, balance=balances)
def test_points_are_whole_usd_times_the_multiplier(usd, balance):
    points, multiplier = fees.points_for(usd_value=usd, recipient_balance=balance)
    assert multiplier in (1, 2, 3)
    assert points == int(usd) * multiplier


def test_a_4_dusdc_price_with_the_fee_on_top_asks_the_smallest_amount_that_leaves_it():
    asked = fees.gross_for_net(4_000_000, 120)
    assert asked - fees.fee_amount(asked, 120) == 4_000_000
    assert (asked - 1) - fees.fee_amount(asked - 1, 120) == 3_999_999


@given(st.integers(min_value=0, max_value=10**30), st.integers(min_value=0, max_value=9_999))
def test_gross_for_net_is_the_smallest_amount_whose_net_is_the_price(net, bps):
    gross = fees.gross_for_net(net, bps)
    assert gross - fees.fee_amount(gross, bps) >= net
    assert gross == 0 or (gross - 1) - fees.fee_amount(gross - 1, bps) < net


@given(st.integers(min_value=0, max_value=10**30), st.integers(min_value=0, max_value=10_000))
def test_amount_before_fee_added_inverts_an_exact_output_quote(amount, bps):
    total = amount + fees.fee_amount(amount, bps)
    assert fees.amount_before_fee_added(total, bps) == amount
