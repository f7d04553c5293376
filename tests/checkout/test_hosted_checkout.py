"""A payment link paid through the hosted page on the devnets, as a payer would, down to the merchant's records."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from chains.watcher import scan_chain
from checkout.display import format_units, qr_svg
from checkout.models import CheckoutSession, LinkVisit, PaymentLink, Transaction
from checkout.visits import flush_views
from merchant.models import Customer
from orders.fees import fee_amount
from orders.models import Order
from tests.conftest import wait_for
from tests.orders.devnet_checkout import PAYER, drive, erc20, pay, random_address, w3_of
from webhooks.models import NotificationEmail, WebhookEvent

pytestmark = pytest.mark.django_db(transaction=True)


def _link(admin_client, b_deployment, **fields):
    body = {
        "name": "Devnet T-shirt",
        "token_address": b_deployment["contracts"]["dUSDC"],
        "chain_id": b_deployment["chain_id"],
        "recipient_address": random_address(),
        "amount": "10000000",
        "items": [{"name": "T-shirt", "amount": "10000000", "quantity": 1}],
        "form_schema": {"fields": [{"id": "email", "type": "email", "label": "Email", "required": True}]},
        **fields,
    }
    response = admin_client.post("/api/v1/payment-links", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _pay_with(a_deployment, symbol="dUSDC"):
    return f"{a_deployment['chain_id']}:{a_deployment['contracts'][symbol]}"


def test_a_link_paid_on_the_hosted_page_completes_its_session_transaction_and_customer(
    devnets_registry, admin_client, settings
):
    (_, a), (chain_b, b) = devnets_registry
    link = _link(admin_client, b, fee_on_top=True)
    admin_client.patch("/api/v1/organization", {"redirect_domains": ["shop.example"]}, format="json")
    payer = Client()

    page = payer.get(
        f"/pay/{link['short_code']}?client_reference_id=cart-7&metadata[order]=A-1&utm_source=mail"
        "&success_url=https://shop.example/thanks?s={SESSION_ID}",
        HTTP_REFERER="https://news.example/post",
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert "Devnet T-shirt" in html and "10 dUSDC" in html
    assert '<label for="pay_with">' in html and '<label for="field_email">' in html
    flush_views()  # as beat does every few seconds
    visit = LinkVisit.objects.get(payment_link_id=link["id"])
    assert (visit.referrer, visit.utm_source) == ("https://news.example/post", "mail")

    missing = payer.post(f"/pay/{link['short_code']}", {"pay_with": _pay_with(a)})
    assert missing.status_code == 400
    assert "Email is required." in missing.content.decode()
    assert CheckoutSession.objects.count() == 0

    started = payer.post(
        f"/pay/{link['short_code']}?client_reference_id=cart-7&metadata[order]=A-1&utm_source=mail"
        "&success_url=https://shop.example/thanks?s={SESSION_ID}",
        {"pay_with": _pay_with(a), "field_email": "payer@example.com"},
    )
    assert started.status_code == 302
    session = CheckoutSession.objects.get()
    assert started["Location"] == f"/pay/s/{session.id}"
    assert (session.client_reference_id, session.metadata, session.utm_source) == (
        "cart-7",
        {"order": "A-1"},
        "mail",
    )
    order = Order.objects.get(session_order__session=session)
    # Fee on top: the payer is asked the smallest amount that leaves the whole price after the order's fee.
    bps, asked = order.fee["finalFeeBps"], int(order.src_amount)
    assert asked - fee_amount(asked, bps) == 10_000_000 > (asked - 1) - fee_amount(asked - 1, bps)

    waiting = payer.get(f"/pay/s/{session.id}").content.decode()
    assert order.global_address in waiting and "<svg" in waiting and "Pay with devnet wallet" in waiting
    # The pay step: the price, the fee, and last the total, which is what to send.
    rows = re.findall(r'<tr[^>]*><th scope="row">([^<]+)</th><td[^>]*>([^<]+)</td></tr>', waiting)
    labels = [label for label, _ in rows]
    assert labels[-3:] == ["Price", "Service fee", "Total"] and rows[-3][1] == "10 dUSDC"
    sent = f"{format_units(asked, 6)} dUSDC"
    assert rows[-1][1] == sent and f'data-value="{format_units(asked, 6)}"' in waiting
    # The QR code is a payment request wallets read: token, chain, amount and deposit address (EIP-681).
    uri = f"ethereum:{order.src_token_address}@{a['chain_id']}/transfer?address={order.global_address}&uint256={asked}"
    assert qr_svg(uri) in waiting

    recipient_before = erc20((chain_b, b)).functions.balanceOf(link["recipient_address"]).call()
    assert payer.post(f"/pay/s/{session.id}/devnet-pay").status_code == 302
    drive(order.pk, until=("executed",))

    session.refresh_from_db()
    assert session.status == "completed"
    received = erc20((chain_b, b)).functions.balanceOf(link["recipient_address"]).call() - recipient_before
    assert received == 10_000_000  # fee on top: the merchant gets the whole price, to the unit
    status = payer.get(f"/pay/s/{session.id}/status").json()
    assert status["session"]["status"] == "completed"
    done = payer.get(f"/pay/s/{session.id}").content.decode()
    receipt = done[done.index('id="receipt"') :]
    assert "T-shirt" in receipt and re.search(r"received</dt><dd[^>]*>10 dUSDC on Devnet B", receipt)
    deposit_hash = order.deposit_txs.get().tx_hash
    assert f'data-value="{deposit_hash}"' in receipt and f"{deposit_hash[:8]}…{deposit_hash[-6:]}" in receipt
    assert receipt.count('class="copy small-copy"') >= 2  # the payment's and the delivery's hashes
    assert "A copy was emailed to p•••r@example.com." in receipt
    assert status["success_url"] == f"https://shop.example/thanks?s={session.id}"

    transaction = Transaction.objects.get(order_id=order.pk)
    assert transaction.status == "completed" and transaction.amount == received
    assert transaction.from_address and transaction.tx_hash
    customer = Customer.objects.get(pk=transaction.customer_id)
    assert customer.wallet_address == transaction.from_address.lower()
    assert customer.email == "payer@example.com" and customer.transaction_count == 1
    assert PaymentLink.objects.get(pk=link["id"]).current_uses == 1

    completed = WebhookEvent.objects.get(event_type="payment.completed").data
    assert completed["id"] == transaction.id and completed["payment_link_id"] == link["id"]
    assert completed["checkoutSession"]["clientReferenceId"] == "cart-7"
    assert completed["checkoutSession"]["metadata"] == {"order": "A-1"}
    checkout_done = WebhookEvent.objects.get(event_type="checkout.completed").data
    assert checkout_done["form_data"] == {"email": "payer@example.com"}
    # The payer gave an email address: their receipt is queued in the notification outbox, once.
    receipt = NotificationEmail.objects.get(event_type="receipt.completed")
    assert receipt.to_address == "payer@example.com" and receipt.subject.startswith(
        "Your receipt from Acme: "
    )
    deposit, delivery = order.deposit_txs.get(), order.relay_txs.get(status="success")
    assert deposit.tx_hash in receipt.body and delivery.tx_hash in receipt.body
    assert "Reference: cart-7" in receipt.body and f"/pay/s/{session.id}" in receipt.body

    api = admin_client.get(f"/api/v1/transactions/{transaction.id}").json()
    assert api["status"] == "completed" and api["session_id"] == session.id
    stats = admin_client.get(f"/api/v1/payment-links/{link['id']}/stats").json()
    assert (stats["views"], stats["sessions"], stats["completions"]) == (1, 1, 1)

    # The merchant's balance transaction: gross bought on Devnet B, the fee, the net that arrived.
    rows = admin_client.get(f"/api/v1/balance-transactions?source_id={transaction.id}").json()["data"]
    assert len(rows) == 1
    row = rows[0]
    assert (row["type"], row["net"], row["net_formatted"]) == ("payment", "10000000", "10 dUSDC")
    assert int(row["amount"]) - int(row["fee"]) == 10_000_000 and int(row["fee"]) >= 0
    assert (row["transaction_id"], row["session_id"], row["payment_link_id"]) == (
        transaction.id,
        session.id,
        link["id"],
    )
    roles = {(h["role"], h["chain_id"]) for h in row["tx_hashes"]}
    assert {("deposit", 31337), ("delivery", 31338)} <= roles
    assert transaction.tx_hash in {h["tx_hash"] for h in row["tx_hashes"]}
    exported = admin_client.get(f"/api/v1/balance-transactions/export?format=json&source_id={transaction.id}")
    assert [r["id"] for r in json.loads(b"".join(exported.streaming_content))] == [row["id"]]

    # The merchant refunds part of it later: the payer's receipt, which the refund email links to, shows it.
    from django.db import transaction as db_transaction

    from refunds.services import refund_delivered
    from tests.factories import RefundBalanceFactory, tx_hash

    RefundBalanceFactory(
        organization_id=transaction.organization_id,
        chain_id=transaction.chain_id,
        token_address=transaction.token_address,
        amount=2_500_000,
    )
    made = admin_client.post(
        "/api/v1/refunds",
        {
            "transaction": transaction.id,
            "amount": "2500000",
            "destination": {
                "chain_id": transaction.chain_id,
                "token_address": transaction.token_address,
                "address": transaction.from_address,
            },
        },
        format="json",
    ).json()
    assert made.get("status") == "pending", made
    assert "Refunded by" not in payer.get(f"/pay/s/{session.id}").content.decode()  # not yet the payer's
    for _ in range(2):  # told twice (a retried task): shown once
        with db_transaction.atomic():  # as the refund's outbox handler runs it
            refund_delivered(made["id"], chain_id=made["destination"]["chain_id"], tx_hash=tx_hash(7))
    receipt = payer.get(f"/pay/s/{session.id}").content.decode()
    receipt = receipt[receipt.index('id="receipt"') :]
    assert receipt.count("Refunded by Acme") == 1
    assert re.search(r'id="merchant-refund-1">2\.5 dUSDC on Devnet [AB]<', receipt), receipt
    assert f'data-value="{tx_hash(7)}"' in receipt and f'data-value="{transaction.from_address}"' in receipt


def test_a_partial_payment_asks_for_the_rest_on_the_same_address(devnets_registry, admin_client):
    (chain_a, a), (_, b) = devnets_registry
    link = _link(admin_client, b, form_schema={})
    payer = Client()
    payer.post(f"/pay/{link['short_code']}", {"pay_with": _pay_with(a)})
    session = CheckoutSession.objects.get()
    order = Order.objects.get(session_order__session=session)
    pay(order.pk, (chain_a, a), amount=int(order.src_amount) // 2)
    wait_for(lambda: scan_chain(a["chain_id"]) is not None and order.deposit_txs.exists(), timeout=30)
    page = payer.get(f"/pay/s/{session.id}").content.decode()
    remaining = int(order.src_amount) - int(order.src_amount) // 2
    assert re.search(r"send the remaining [0-9.]+ dUSDC", page)
    assert Transaction.objects.get(order_id=order.pk).status == "pending"
    assert payer.get(f"/pay/s/{session.id}/status").json()["order"]["remaining"] == str(remaining)
    # Another token cannot replace an order that has received money.
    assert "Pay with another token" not in page
    changed = payer.post(f"/pay/s/{session.id}?change=1", {"pay_with": _pay_with(a, "dWETH")})
    assert changed.status_code == 302  # back to the payment: the choice is not offered any more
    assert list(Order.objects.filter(session_order__session=session)) == [order]


def test_half_paid_then_expired_through_the_api_gives_the_half_back_by_itself(
    devnets_registry, admin_client, settings
):
    """Found by probing: 2,000,000 paid on a 4,000,000 link, then the session expired: the order stayed
    `expired` with the money at its deposit address until staff ran settle_order."""
    from orders.models import RefundTx

    (chain_a, a), _ = devnets_registry
    link = _link(admin_client, devnets_registry[1][1], form_schema={}, amount="4000000", items=[])
    payer = Client()
    payer.post(f"/pay/{link['short_code']}", {"pay_with": _pay_with(a)})
    session = CheckoutSession.objects.get()
    order = Order.objects.get(session_order__session=session)
    payer_address = w3_of((chain_a, a)).eth.accounts[PAYER]
    before = erc20((chain_a, a)).functions.balanceOf(payer_address).call()
    vault_before = erc20((chain_a, a)).functions.balanceOf(settings.VAULT_ADDRESS).call()
    half = int(order.src_amount) // 2
    pay(order.pk, (chain_a, a), amount=half)
    wait_for(lambda: scan_chain(a["chain_id"]) is not None and order.deposit_txs.exists(), timeout=30)
    assert erc20((chain_a, a)).functions.balanceOf(payer_address).call() == before - half

    expired = admin_client.post(f"/api/v1/checkout-sessions/{session.id}/expire")
    assert expired.status_code == 200 and expired.json()["status"] == "expired"
    order.refresh_from_db()
    assert order.status == "refunding"  # at once, not left `expired` holding the money

    order = drive(order.pk, until=("refunded",))
    refund = RefundTx.objects.get(order=order)
    assert (refund.status, int(refund.amount)) == ("success", half)
    assert erc20((chain_a, a)).functions.balanceOf(payer_address).call() == before  # to the unit
    assert erc20((chain_a, a)).functions.balanceOf(settings.VAULT_ADDRESS).call() == vault_before
    assert erc20((chain_a, a)).functions.balanceOf(order.global_address).call() == 0
    failed = WebhookEvent.objects.get(event_type="payment.failed").data
    assert failed["refund_tx_hash"] == refund.tx_hash

    # The payer's page says why, what went back to which address on which chain with the hash, and offers
    # to try again.
    page = payer.get(f"/pay/s/{session.id}").content.decode()
    assert "The time to pay ran out: what you paid was sent back to you." in page
    assert "The time to pay ran out before the whole amount arrived." in page
    assert f'data-value="{payer_address}"' in page and f'data-value="{refund.tx_hash}"' in page
    assert re.search(r"2 dUSDC on Devnet A|[0-9.]+ dUSDC on Devnet A", page)
    assert (
        f'href="/pay/{link["short_code"]}" id="try-again"' in page
        or f'id="try-again" href="/pay/{link["short_code"]}"' in page
    )


def test_paying_twice_the_price_of_a_link_sends_the_surplus_back_and_the_records_show_it(
    devnets_registry, admin_client, settings
):
    """Found black-box: 8 dUSDC paid on a 4 dUSDC link delivered 7.904 to the merchant, refunded nothing, and the
    transaction said source_amount 4,000,000. A fixed price takes what it asks; the rest goes back."""
    from orders.models import RefundTx

    (chain_a, a), (chain_b, b) = devnets_registry
    link = _link(admin_client, b, form_schema={}, amount="4000000", items=[])
    payer = Client()
    payer.post(f"/pay/{link['short_code']}", {"pay_with": _pay_with(a)})
    session = CheckoutSession.objects.get()
    order = Order.objects.get(session_order__session=session)
    price = int(order.src_amount)
    payer_address = w3_of((chain_a, a)).eth.accounts[PAYER]
    before = {
        "payer": erc20((chain_a, a)).functions.balanceOf(payer_address).call(),
        "vault": erc20((chain_a, a)).functions.balanceOf(settings.VAULT_ADDRESS).call(),
        "merchant": erc20((chain_b, b)).functions.balanceOf(link["recipient_address"]).call(),
        "solver": erc20((chain_b, b)).functions.balanceOf(settings.SOLVER_ADDRESS).call(),
    }

    pay(order.pk, (chain_a, a), amount=2 * price)
    order = drive(
        order.pk, until=("executed",), also=lambda o: o.refund_txs.filter(status="success").exists()
    )

    refund = RefundTx.objects.get(order=order)
    assert (refund.status, int(refund.amount)) == ("success", price)
    delivered = int(order.settlement["dstAmount"])
    assert delivered == int(order.payload["expectedDstAmount"])  # the price less the fee, not twice that
    assert erc20((chain_a, a)).functions.balanceOf(payer_address).call() == before["payer"] - price
    assert erc20((chain_a, a)).functions.balanceOf(settings.VAULT_ADDRESS).call() == before["vault"] + price
    assert (
        erc20((chain_b, b)).functions.balanceOf(link["recipient_address"]).call()
        == before["merchant"] + delivered
    )
    assert (
        erc20((chain_b, b)).functions.balanceOf(settings.SOLVER_ADDRESS).call()
        == before["solver"] - delivered
    )
    transaction = admin_client.get(
        f"/api/v1/transactions/{Transaction.objects.get(order_id=order.pk).id}"
    ).json()
    assert (transaction["source_amount"], transaction["refunded_amount"]) == (str(2 * price), str(price))
    assert (transaction["status"], transaction["amount"]) == ("completed", str(delivered))
    rows = admin_client.get(f"/api/v1/balance-transactions?source_id={transaction['id']}").json()["data"]
    by_type = {row["type"]: row for row in rows}
    assert set(by_type) == {"payment", "refund"} and len(rows) == 2
    assert (by_type["payment"]["net"], by_type["payment"]["chain_id"]) == (str(delivered), 31338)
    assert (by_type["refund"]["amount"], by_type["refund"]["net"], by_type["refund"]["chain_id"]) == (
        str(-price),
        "0",
        31337,
    )
    assert by_type["refund"]["tx_hashes"] == [
        {"role": "refund", "chain_id": 31337, "tx_hash": refund.tx_hash}
    ]


def test_an_order_of_the_hosted_checkout_describes_both_tokens_as_the_contract_asks(
    devnets_registry, admin_client
):
    (_, a), (_, b) = devnets_registry
    link = _link(admin_client, b, form_schema={})
    Client().post(f"/pay/{link['short_code']}", {"pay_with": _pay_with(a)})
    order = Order.objects.get(session_order__session__payment_link_id=link["id"])
    metadata = Client().get(f"/orders/{order.pk}").json()["data"]["order"]["metadata"]
    assert metadata["checkoutSessionId"] == order.session_order.session_id
    assert (
        metadata["srcToken"]["chainId"],
        metadata["srcToken"]["address"],
        metadata["srcToken"]["symbol"],
    ) == (
        a["chain_id"],
        a["contracts"]["dUSDC"],
        "dUSDC",
    )
    assert (
        metadata["dstToken"]["chainId"],
        metadata["dstToken"]["address"],
        metadata["dstToken"]["decimals"],
    ) == (
        b["chain_id"],
        b["contracts"]["dUSDC"],
        6,
    )
