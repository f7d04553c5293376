"""`reconcile` is clean after the two flows the attacker's probe found booked wrongly (issue 64, item 5): a
wrong-token deposit (its sweep's key, `order:<id>:sweep:<deposit>`, extends the order's own `order:<id>:sweep`,
and posting the one reversed the other as if reorganised), and an x402 payment of a link (the settlement's
transfer and the deposit it made were both posted)."""

from __future__ import annotations

import base64
import json

import pytest
from eth_account import Account

from chains.devnet import devnet_private_key
from chains.models import OutboxTx
from chains.wallet import devnet_transfer
from checkout.models import PaymentLink
from facilitator.models import Settlement
from ledger.models import Posting
from ledger.reconcile import reconcile_chain
from orders.models import Order
from tests.facilitator.signing import authorize
from tests.ledger.test_reconcile import devnets, differences, every_posting_balances, settle_everywhere  # noqa: F401
from tests.orders.devnet_checkout import checkout, drive, pay, random_address, run_until

pytestmark = pytest.mark.django_db


def test_a_wrong_token_deposit_beside_the_payment_reconciles_on_both_chains(devnets, admin_client):  # noqa: F811
    a, b = devnets
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    order = Order.objects.get(pk=order_id)
    devnet_transfer(
        chain=a[0], token=a[1]["contracts"]["dWETH"], to=order.global_address, amount=10**15, from_account=1
    )
    run_until(  # the wrong token swept and posted first, then the payment: the order's own sweep comes after
        lambda: Posting.objects.filter(key__startswith=f"outbox:order:{order_id}:sweep:").exists(),
        order_id,
        what="the wrong token's sweep posted",
    )
    pay(order_id, a)

    drive(order_id, also=lambda o: o.refund_txs.filter(status="success").exists(), timeout=90)
    run_until(
        lambda: not OutboxTx.objects.filter(status__in=("queued", "signed", "broadcast")).exists(),
        order_id,
        what="every transaction mined",
    )
    settle_everywhere(devnets)

    keys = set(
        OutboxTx.objects.filter(key__startswith=f"order:{order_id}:sweep").values_list("key", flat=True)
    )
    assert len(keys) == 2  # the order's own sweep and the wrong token's
    assert not Posting.objects.filter(kind="reorg").exists()
    every_posting_balances()
    assert differences(reconcile_chain(31337)) == {}
    assert differences(reconcile_chain(31338)) == {}


def test_an_x402_payment_of_a_link_is_booked_once_and_reconciles(devnets, organization, client, settings):  # noqa: F811
    a, _ = devnets
    settings.X402_SETTLE_WAIT_SECONDS = 0
    link = PaymentLink.objects.create(
        organization=organization,
        name="A report",
        token_address=a[1]["contracts"]["dUSDC"],
        chain_id=31337,
        recipient_address=random_address(),
        amount=2_500_000,
    )
    offer = json.loads(
        base64.b64decode(client.get(f"/x402/pay/{link.short_code}").headers["PAYMENT-REQUIRED"])
    )["accepts"][0]
    payer = Account.from_key(devnet_private_key(3))
    payload = authorize(payer, to=offer["payTo"], value=offer["amount"], token=offer["asset"], chain_id=31337)
    header = base64.b64encode(json.dumps({"x402Version": 2, "accepted": offer, "payload": payload}).encode())

    answer = client.get(f"/x402/pay/{link.short_code}", HTTP_PAYMENT_SIGNATURE=header.decode())
    assert answer.status_code == 402  # pending: the outbox has not sent it yet
    run_until(lambda: Settlement.objects.get().status == "settled", what="the settlement")
    paid = client.get(f"/x402/pay/{link.short_code}", HTTP_PAYMENT_SIGNATURE=header.decode())
    assert paid.status_code == 200, paid.json()
    order = drive(paid.json()["orderId"])
    settle_everywhere(devnets)

    assert order.status == "executed", order.error_details
    into_address = Posting.objects.filter(
        entries__account__ref=order.global_address.lower(), entries__side="debit"
    ).values_list("kind", flat=True)
    assert sorted(into_address) == ["deposit"]  # once, as the deposit
    every_posting_balances()
    assert differences(reconcile_chain(31337)) == {}
