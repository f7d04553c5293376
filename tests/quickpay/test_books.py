"""Every payment an organization received is a transaction: a quick payment paid on a real devnet shows in
`/transactions`, its export and stats, analytics, the customers and the dashboard's totals, and shares one
refundable amount under both of its names; one that expired unpaid is a failed transaction."""

import csv
import io
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from web3 import Web3

from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from quickpay.models import QuickPayment
from quickpay.services import quick_payments_expire
from quickpay.settlement import quick_payment_settle
from tests.dashboard.conftest import make_member, signed_in
from tests.orders.devnet_checkout import random_address
from tests.quickpay.test_settlement import create, settle_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def devnet_a(devnets_registry, settings):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    return devnets_registry[0]


def _create(client, devnet, amount="2500000") -> QuickPayment:
    return create(client, devnet, random_address(), amount=amount)


def _listed(client, **filters):
    response = client.get("/api/v1/transactions", filters)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_a_paid_quick_payment_is_a_completed_transaction_everywhere(admin_client, organization, devnet_a):
    w3 = Web3(Web3.HTTPProvider(devnet_a[0].rpc_url))
    payer = w3.eth.accounts[1]
    payment = _create(admin_client, devnet_a)
    devnet_transfer(
        chain=devnet_a[0],
        token=payment.token_address,
        to=payment.deposit_address,
        amount=2_500_000,
        from_account=1,
    )
    deadline = time.monotonic() + 30
    while not payment.deposits.exists() and time.monotonic() < deadline:
        scan_chain(31337)
        time.sleep(0.3)
    (row,) = _listed(admin_client)  # paid in full, the payout not mined yet: confirming
    assert (row["quick_payment_id"], row["status"], row["order_id"]) == (payment.id, "confirming", None)

    settle_until(payment.id, [f"quickpay:{payment.id}:payout"])
    payment.refresh_from_db()
    (row,) = _listed(admin_client, status="completed", chain_id=31337)
    assert row["id"].startswith("txn_")
    assert (row["amount"], row["source_amount"], row["fee_amount"], row["amount_usd"]) == (
        "2500000",
        "2500000",
        "0",
        "2.50",
    )
    assert (row["from_address"].lower(), row["to_address"], row["tx_hash"]) == (
        payer.lower(),
        payment.recipient_address,
        payment.tx_hash,
    )
    assert row["completed_at"] is not None
    assert admin_client.get(f"/api/v1/transactions/{row['id']}").json()["quick_payment_id"] == payment.id

    stats = admin_client.get("/api/v1/transactions/stats").json()
    assert (stats["total_transactions"], stats["completed_transactions"], stats["total_volume_usd"]) == (
        1,
        1,
        "2.50",
    )
    exported = admin_client.get("/api/v1/transactions/export?format=csv")
    lines = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert [(line["id"], line["quick_payment_id"]) for line in lines] == [(row["id"], payment.id)]

    revenue = admin_client.get("/api/v1/analytics/overview").json()["revenue"]
    assert (revenue["period_usd"], revenue["period_transactions"]) == ("2.50", 1)
    (customer,) = admin_client.get("/api/v1/customers").json()["data"]
    assert customer["wallet_address"].lower() == payer.lower()
    assert (
        admin_client.get(f"/api/v1/customers/{customer['id']}/transactions").json()["data"][0]["id"]
        == row["id"]
    )

    home = signed_in(make_member(organization)).get("/dashboard/").content.decode()
    assert 'id="today-revenue">$2.50<' in home and "2.5 dUSDC" in home

    # Settling again, or the same progress handled twice, counts nothing twice.
    quick_payment_settle(payment.id)
    assert admin_client.get("/api/v1/analytics/overview").json()["revenue"]["period_transactions"] == 1

    # One refundable amount under both names: refunding it all as the transaction leaves nothing for the quick
    # payment's own id, and the refund is listed under either.
    refund = admin_client.post(
        "/api/v1/refunds", {"transaction": row["id"], "amount": "2500000"}, format="json"
    )
    assert refund.status_code == 201, refund.content
    again = admin_client.post("/api/v1/refunds", {"transaction": payment.id, "amount": "1"}, format="json")
    assert again.status_code == 400 and again.json()["error"]["param"] == "amount", again.content
    assert [r["id"] for r in admin_client.get(f"/api/v1/refunds?transaction={row['id']}").json()["data"]] == [
        refund.json()["id"]
    ]
    assert admin_client.get(f"/api/v1/transactions/{row['id']}").json()["refunds"] == [refund.json()["id"]]


def test_an_expired_partly_paid_quick_payment_is_a_failed_transaction(admin_client, devnet_a):
    payment = _create(admin_client, devnet_a)
    devnet_transfer(
        chain=devnet_a[0],
        token=payment.token_address,
        to=payment.deposit_address,
        amount=1_000_000,
        from_account=4,
    )
    deadline = time.monotonic() + 30
    while not payment.deposits.exists() and time.monotonic() < deadline:
        scan_chain(31337)
        time.sleep(0.3)
    (row,) = _listed(admin_client)
    assert (row["status"], row["source_amount"]) == ("pending", "1000000")

    assert quick_payments_expire(now=timezone.now() + timedelta(days=1)) == 1
    settle_until(payment.id, [f"quickpay:{payment.id}:return:{payment.deposits.get().deposit_id}"])
    (row,) = _listed(admin_client)
    assert row["status"] == "failed"
    revenue = admin_client.get("/api/v1/analytics/overview").json()["revenue"]
    assert revenue["period_transactions"] == 0


def test_an_anonymous_quick_payment_is_nobodys_transaction(api_client, admin_client, devnet_a):
    payment = _create(api_client, devnet_a, amount="1000000")
    devnet_transfer(
        chain=devnet_a[0],
        token=payment.token_address,
        to=payment.deposit_address,
        amount=1_000_000,
        from_account=5,
    )
    settle_until(payment.id, [f"quickpay:{payment.id}:payout"])
    assert _listed(admin_client) == []
