"""Amounts shown to and read from payers keep every digit: a token amount is up to 78 digits, more than
Decimal's default 28 (core.apps sets the precision every thread starts from)."""

from __future__ import annotations

import threading
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from checkout.display import format_units, parse_units


@given(units=st.integers(min_value=1, max_value=2**256 - 1), decimals=st.integers(min_value=0, max_value=18))
def test_an_amount_is_shown_and_read_back_to_the_unit(units, decimals):
    shown = format_units(units, decimals)
    assert parse_units(shown, decimals) == (
        units if len(shown) <= 40 else None
    )  # the page takes 40 characters
    assert Decimal(shown).scaleb(decimals) == units


def test_a_thread_made_after_startup_keeps_every_digit():
    found = {}

    def work():
        found["shown"] = format_units(10**30 + 1, 18)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert found["shown"] == "1000000000000.000000000000000001"
