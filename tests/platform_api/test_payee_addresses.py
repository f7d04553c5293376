"""An address that would keep what is sent to it is refused wherever money is sent (issue 64, item 7): the zero
address, a token's own contract, the service's own addresses and its deposit addresses, each 400 naming the
field, nothing written."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chains.evm import to_checksum_address
from chains.models import WatchedAddress
from checkout.models import PaymentLink
from quickpay.models import QuickPayment
from tests.factories import BASE, USDC_BASE

pytestmark = pytest.mark.django_db

DEPOSIT = "0x" + "de" * 20


def _lost(what, settings):
    if what == "deposit address":
        WatchedAddress.objects.create(
            chain_id=BASE,
            address=to_checksum_address(DEPOSIT),
            owner="order:x",
            watch_until=timezone.now() + timedelta(hours=1),
        )
        return DEPOSIT
    return {
        "zero address": "0x" + "0" * 40,
        "token's contract": USDC_BASE.lower(),
        "own addresses": settings.SOLVER_ADDRESS,
    }[what]


WHATS = ["zero address", "token's contract", "own addresses", "deposit address"]


@pytest.mark.parametrize("what", WHATS)
def test_a_payment_link_or_quick_payment_paying_an_address_that_loses_money_is_refused(
    admin_client, tokens, settings, what
):
    lost = _lost(what, settings)
    link = {
        "name": "Tee",
        "token_address": USDC_BASE,
        "chain_id": BASE,
        "amount": "1000",
        "recipient_address": lost,
    }
    quick = {"amount": "1000", "token_address": USDC_BASE, "chain_id": BASE, "recipient_address": lost}

    for path, body in (("/api/v1/payment-links", link), ("/api/v1/quick-pay", quick)):
        response = admin_client.post(path, body, format="json")
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert (error["param"], error["code"]) == ("recipient_address", "invalid_field_value")
        assert what in error["message"]
    assert not PaymentLink.objects.exists() and not QuickPayment.objects.exists()


def test_an_ordinary_wallet_is_a_recipient(admin_client, tokens):
    link = {
        "name": "Tee",
        "token_address": USDC_BASE,
        "chain_id": BASE,
        "amount": "1000",
        "recipient_address": "0x" + "12" * 20,
    }
    assert admin_client.post("/api/v1/payment-links", link, format="json").status_code == 201
