"""The dashboard's amount field: what the member types becomes exactly the token's smallest units, or an
error beside the field; never a rounded amount."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from chains.models import Token
from dashboard.forms import ApiForm


class _Form(ApiForm):
    FIELDS = ("amount",)


@given(units=st.integers(min_value=1, max_value=10**30), decimals=st.integers(min_value=0, max_value=18))
def test_a_typed_amount_is_its_units_exactly(units, decimals):
    token = Token(chain_id=1, address="0x" + "0" * 40, symbol="TKN", decimals=decimals)
    typed = format(Decimal(units).scaleb(-decimals), "f")
    form = _Form({"amount": typed})
    assert form.units("amount", token) == units and form.errors == {}
    comma = _Form({"amount": typed.replace(".", ",")})  # a decimal comma, as many locales type it
    assert comma.units("amount", token) == units


@given(units=st.integers(min_value=1, max_value=10**30), decimals=st.integers(min_value=0, max_value=17))
def test_one_digit_too_many_is_refused_not_rounded(units, decimals):
    token = Token(chain_id=1, address="0x" + "0" * 40, symbol="TKN", decimals=decimals)
    typed = format(Decimal(units * 10 + 1).scaleb(-(decimals + 1)), "f")  # one decimal past the token's
    form = _Form({"amount": typed})
    assert form.units("amount", token) is None
    assert form.errors["amount"] == f"At most {decimals} decimals for TKN."


@given(
    typed=st.sampled_from(
        ["0", "-1", "abc", "1e400", "NaN", "Infinity", "1" * 79, "9" * 72, "0x10", "1..2", "+1", "1.", "."]
    )
)
def test_what_is_not_a_positive_amount_is_said_beside_the_field(typed):
    token = Token(chain_id=1, address="0x" + "0" * 40, symbol="TKN", decimals=6)
    form = _Form({"amount": typed})
    assert form.units("amount", token) is None and form.errors["amount"]
