"""A checkout widget paid on the devnets: the payment completes and counts for the widget."""

from __future__ import annotations

import pytest
from django.test import Client

from checkout.models import CheckoutSession, Transaction, WidgetEvent
from checkout.visits import flush_views
from orders.models import Order
from tests.orders.devnet_checkout import drive, erc20, random_address

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_payment_started_from_a_widget_counts_as_its_completion(devnets_registry, admin_client):
    (_, a), (chain_b, b) = devnets_registry
    recipient = random_address()
    widget = admin_client.post(
        "/api/v1/widgets",
        {
            "name": "Donate 5",
            "widget_type": "checkout",
            "config": {
                "recipient_address": recipient,
                "destination_token": b["contracts"]["dUSDC"],
                "destination_chain_id": b["chain_id"],
                "amount": "5000000",
            },
        },
        format="json",
    ).json()
    payer = Client()
    assert "5 dUSDC" in payer.get(f"/widgets/{widget['short_code']}").content.decode()
    started = payer.post(f"/widgets/{widget['short_code']}")
    session = CheckoutSession.objects.get()
    assert started["Location"] == f"/pay/s/{session.id}"
    chosen = payer.post(started["Location"], {"pay_with": f"{a['chain_id']}:{a['contracts']['dUSDC']}"})
    assert chosen.status_code == 302
    order = Order.objects.get(session_order__session=session)
    assert payer.post(f"/pay/s/{session.id}/devnet-pay").status_code == 302
    drive(order.pk, until=("executed",))

    session.refresh_from_db()
    assert session.status == "completed" and session.widget_id == widget["id"]
    assert erc20((chain_b, b)).functions.balanceOf(recipient).call() > 0
    assert Transaction.objects.get(order_id=order.pk).status == "completed"
    flush_views()  # as beat does every few seconds
    stats = admin_client.get(f"/api/v1/widgets/{widget['id']}/stats").json()
    assert (stats["views"], stats["interactions"], stats["completions"]) == (1, 1, 1)
    assert stats["conversion_rate"] == 1.0 and stats["revenue_usd"] != "0.00"
    assert WidgetEvent.objects.filter(kind="completion", session_id=session.id).count() == 1
