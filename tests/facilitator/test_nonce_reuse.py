"""A settled nonce answers only its own authorization (issue 64, item 1): the attacker's probe settled a 1-unit
authorization to itself with the nonce of a victim's verified one, and the victim's settle then answered
success with the 1-unit transaction. Raw signed authorizations against /x402/settle, a payment link and the
hosted page's signature path, on a real anvil node."""

from __future__ import annotations

import base64
import json

import pytest
from eth_account import Account

from checkout.models import PaymentLink
from facilitator.models import Settlement
from orders.models import Order
from tests.conftest import client_for
from tests.facilitator.test_facilitator import (
    chain,  # noqa: F401  (a fixture)
    drive_outbox,
    payer_account,
    post,
    requirements,
    signed,
)
from tests.factories import OrganizationFactory, make_api_key

pytestmark = pytest.mark.django_db

NONCE_USED = "invalid_exact_evm_nonce_already_used"


@pytest.fixture
def writer(organization):
    _, raw = make_api_key(organization, permissions=["write"], name="victim")
    return client_for(raw)


def _link(organization, deployment, amount: int) -> PaymentLink:
    return PaymentLink.objects.create(
        organization=organization,
        name="A report",
        token_address=deployment["contracts"]["dUSDC"],
        chain_id=31337,
        recipient_address=Account.create().address,
        amount=amount,
    )


def _settled_to_self(w3, usdc, client, payer, nonce):
    """The attacker's move: a 1-unit authorization to itself with `nonce`, settled and mined."""
    own = signed(w3, usdc, requirements(usdc, payer.address, amount=1), payer, nonce=nonce)
    post(client, "/x402/settle", own)
    drive_outbox()
    answer = post(client, "/x402/settle", own).json()
    assert answer["success"] is True, answer
    return own, answer


def test_a_victims_authorization_whose_nonce_the_payer_spent_elsewhere_is_refused_not_answered_as_paid(
    chain,  # noqa: F811
    writer,
):
    w3, usdc, _ = chain
    payer, victim = payer_account(6), Account.create().address
    victims = signed(w3, usdc, requirements(usdc, victim, amount=5_000_000), payer)
    nonce = victims["paymentPayload"]["payload"]["authorization"]["nonce"]
    assert post(writer, "/x402/verify", victims).json()["isValid"] is True
    _, spent = _settled_to_self(w3, usdc, writer, payer, nonce)

    answer = post(writer, "/x402/settle", victims).json()

    assert (answer["success"], answer["errorReason"]) == (False, NONCE_USED)
    assert answer["transaction"] != spent["transaction"]
    assert usdc.functions.balanceOf(victim).call() == 0
    assert Settlement.objects.count() == 1  # the attacker's alone


def test_a_garbage_signature_or_another_value_with_a_used_nonce_is_refused_and_the_identical_replay_answers(
    chain,  # noqa: F811
    writer,
):
    w3, usdc, _ = chain
    payer, merchant = payer_account(6), Account.create().address
    body = signed(w3, usdc, requirements(usdc, merchant, amount=300), payer)
    post(writer, "/x402/settle", body)
    drive_outbox()
    settled = post(writer, "/x402/settle", body).json()
    assert settled["success"] is True
    authorization = body["paymentPayload"]["payload"]["authorization"]

    garbage = json.loads(json.dumps(body))
    garbage["paymentPayload"]["payload"]["signature"] = "0x" + "11" * 65
    other_value = signed(
        w3, usdc, requirements(usdc, merchant, amount=301), payer, nonce=authorization["nonce"]
    )
    later = signed(
        w3,
        usdc,
        requirements(usdc, merchant, amount=300),
        payer,
        nonce=authorization["nonce"],
        validBefore=str(int(authorization["validBefore"]) + 60),
    )

    for refused in (garbage, other_value, later):
        answer = post(writer, "/x402/settle", refused).json()
        assert (answer["success"], answer["errorReason"]) == (False, NONCE_USED), answer
    assert post(writer, "/x402/settle", body).json() == settled  # the identical payload, answered
    assert usdc.functions.balanceOf(merchant).call() == 300


def test_another_organizations_settlement_is_never_answered_as_this_ones(chain, writer):  # noqa: F811
    w3, usdc, _ = chain
    payer, merchant = payer_account(6), Account.create().address
    body = signed(w3, usdc, requirements(usdc, merchant, amount=400), payer)
    post(writer, "/x402/settle", body)
    drive_outbox()
    assert post(writer, "/x402/settle", body).json()["success"] is True
    _, raw = make_api_key(OrganizationFactory(slug="other"), permissions=["write"], name="other")

    answer = post(client_for(raw), "/x402/settle", body).json()

    assert (answer["success"], answer["errorReason"]) == (False, NONCE_USED)


def test_a_replay_whose_requirements_name_another_payee_or_amount_is_refused(chain, writer):  # noqa: F811
    w3, usdc, _ = chain
    payer, merchant = payer_account(6), Account.create().address
    body = signed(w3, usdc, requirements(usdc, merchant, amount=500), payer)
    post(writer, "/x402/settle", body)
    drive_outbox()
    for changes in ({"payTo": Account.create().address}, {"amount": "5000"}):
        replay = json.loads(json.dumps(body))
        replay["paymentRequirements"] |= changes
        replay["paymentPayload"]["accepted"] |= changes
        answer = post(writer, "/x402/settle", replay).json()
        assert answer["success"] is False
        assert answer["errorReason"] in (
            "invalid_exact_evm_payload_recipient_mismatch",
            "invalid_exact_evm_payload_authorization_value_mismatch",
        )


def test_a_link_payment_with_a_nonce_settled_elsewhere_is_not_paid_and_makes_no_order(
    chain,  # noqa: F811
    writer,
    organization,
    client,
    settings,
):
    w3, usdc, deployment = chain
    link = _link(organization, deployment, 2_500_000)
    response = client.get(f"/x402/pay/{link.short_code}")
    offer = json.loads(base64.b64decode(response.headers["PAYMENT-REQUIRED"]))["accepts"][0]
    payer = payer_account(6)
    theirs = signed(w3, usdc, requirements(usdc, offer["payTo"], amount=int(offer["amount"])), payer)
    nonce = theirs["paymentPayload"]["payload"]["authorization"]["nonce"]
    _settled_to_self(w3, usdc, writer, payer, nonce)
    header = {"x402Version": 2, "accepted": offer, "payload": theirs["paymentPayload"]["payload"]}

    paid = client.get(
        f"/x402/pay/{link.short_code}",
        HTTP_PAYMENT_SIGNATURE=base64.b64encode(json.dumps(header).encode()).decode(),
    )

    assert paid.status_code == 402
    assert json.loads(base64.b64decode(paid.headers["PAYMENT-REQUIRED"]))["error"].startswith(NONCE_USED)
    assert not Order.objects.exists()
    assert usdc.functions.balanceOf(offer["payTo"]).call() == 0


def test_the_hosted_pages_signature_with_a_nonce_settled_elsewhere_is_refused_not_answered_settled(
    chain,  # noqa: F811
    writer,
    organization,
    client,
):
    import uuid

    from checkout.services import link_payment_order

    w3, usdc, deployment = chain
    link = _link(organization, deployment, 3_000_000)
    order = link_payment_order(
        link=link,
        amount=3_000_000,
        src_chain=31337,
        src_token=usdc.address,
        src_amount=3_000_000,
        order_id=uuid.uuid4(),
        payer_ip="127.0.0.1",
    )
    payer = payer_account(6)
    page = signed(w3, usdc, requirements(usdc, order.global_address, amount=3_000_000), payer)
    _settled_to_self(w3, usdc, writer, payer, page["paymentPayload"]["payload"]["authorization"]["nonce"])

    answer = client.post(
        f"/x402/checkout/{order.session_order.session_id}/authorization",
        json.dumps(page["paymentPayload"]["payload"]),
        content_type="application/json",
    )

    assert (answer.status_code, answer.json()["reason"]) == (400, NONCE_USED)
    assert usdc.functions.balanceOf(order.global_address).call() == 0
