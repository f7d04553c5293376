"""The hosted page's payment by signature (POST /x402/checkout/{session}/authorization): what it refuses, and
that a refusal moves nothing (issue 45, item 4; the browser test is tests/checkout/test_wallet_browser.py)."""

from __future__ import annotations

import json
import uuid

import pytest
from eth_account import Account

from chains.devnet import devnet_private_key
from checkout.models import PaymentLink
from checkout.services import link_payment_order
from facilitator.models import Settlement
from tests.facilitator.signing import authorize

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(devnets_registry, organization, settings):
    settings.X402_SETTLE_WAIT_SECONDS = 0
    (_, a), _ = devnets_registry
    link = PaymentLink.objects.create(
        organization=organization,
        name="Zine",
        token_address=a["contracts"]["dUSDC"],
        chain_id=31337,
        recipient_address=Account.create().address,
        amount=3_000_000,
    )

    def order(symbol="dUSDC"):
        return link_payment_order(
            link=link,
            amount=3_000_000,
            src_chain=31337,
            src_token=a["contracts"][symbol],
            src_amount=3_000_000 if symbol == "dUSDC" else 10**15,
            order_id=uuid.uuid4(),
            payer_ip="127.0.0.1",
        )

    return order, a


def _signed(order, value, key=None):
    payer = Account.from_key(devnet_private_key(2))
    return authorize(payer, to=order.global_address, value=value, token=order.src_token_address, key=key)


def _post(client, order, body):
    session_id = order.session_order.session_id
    return client.post(
        f"/x402/checkout/{session_id}/authorization", json.dumps(body), content_type="application/json"
    )


def test_a_signed_payment_of_what_is_owed_is_taken_and_submitted(waiting, client):
    make, _ = waiting
    order = make()
    answer = _post(client, order, _signed(order, 3_000_000))
    assert (answer.status_code, answer.json()["status"]) == (200, "pending")
    settlement = Settlement.objects.get()
    assert (settlement.pay_to, int(settlement.value)) == (order.global_address, 3_000_000)


@pytest.mark.parametrize("case", ["too_much", "zero", "another_signer", "not_json", "no_signature"])
def test_a_bad_signed_payment_is_refused_with_its_reason_and_nothing_moves(waiting, client, case):
    make, _ = waiting
    order = make()
    body = {
        "too_much": lambda: _signed(order, 3_000_001),
        "zero": lambda: _signed(order, 0),
        "another_signer": lambda: _signed(order, 3_000_000, key=Account.create().key),
        "not_json": lambda: None,
        "no_signature": lambda: _signed(order, 3_000_000) | {"signature": None},
    }[case]()
    if body is None:
        session_id = order.session_order.session_id
        answer = client.post(
            f"/x402/checkout/{session_id}/authorization", "{", content_type="application/json"
        )
    else:
        answer = _post(client, order, body)
    assert answer.status_code == 400
    assert answer.json()["reason"] in {
        "invalid_exact_evm_payload_authorization_value_mismatch",
        "invalid_exact_evm_payload_signature",
        "invalid_payload",
    }
    assert answer.json()["error"]
    assert not Settlement.objects.exists()


def test_a_token_without_eip3009_or_a_checkout_that_awaits_nothing_is_refused(waiting, client):
    make, _ = waiting
    weth = make("dWETH")
    refused = _post(client, weth, _signed(weth, 10**15))
    assert refused.status_code == 400 and "cannot be paid by signature" in refused.json()["error"]
    assert (
        client.post("/x402/checkout/nope/authorization", "{}", content_type="application/json").status_code
        == 404
    )
    paid = make()
    paid.status = "expired"
    paid.save(update_fields=["status"])
    assert _post(client, paid, _signed(paid, 3_000_000)).status_code == 409
    assert not Settlement.objects.exists()
