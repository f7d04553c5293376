"""A contract wallet's internal payment has no known sender: a refund of it goes to the order's refundAddress,
or waits, listed in the admin, until staff enter an address. On real anvil devnets, balances to the wei."""

import pytest

from chains.devnet import deploy_contract
from chains.models import Deposit, Incident
from orders.models import Order
from tests.orders.devnet_checkout import checkout, random_address, run_until, w3_of

pytestmark = pytest.mark.django_db

WEI = 10**15


@pytest.fixture
def devnets(devnets_registry, settings):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0  # no worker here: the poll signs what was asked for
    return devnets_registry


def _wallet_pays(devnet, to: str, amount: int) -> str:
    w3 = w3_of(devnet)
    owner = w3.eth.accounts[6]
    wallet = deploy_contract(w3, "ContractWallet", sender=owner)
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": owner, "to": wallet.address, "value": amount})
    )
    tx = wallet.functions.pay([to], amount).transact({"from": owner})
    assert w3.eth.wait_for_transaction_receipt(tx).status == 1
    return wallet.address


def _refunded(order_id) -> bool:
    return Order.objects.get(pk=order_id).refund_txs.filter(status="success").exists()


def test_a_refund_of_an_internal_payment_goes_to_the_orders_refund_address(devnets, admin_client):
    a, b = devnets
    refund_to = random_address()
    order_id, _ = checkout(admin_client, a[1], b[1], "mint_nft", body_extra={"refundAddress": refund_to})
    order = Order.objects.get(pk=order_id)
    assert admin_client.get(f"/orders/{order_id}").json()["data"]["order"]["refundAddress"] == refund_to

    _wallet_pays(a, order.global_address, WEI)  # native coin for an order priced in dUSDC: the wrong token
    run_until(lambda: _refunded(order_id), order_id, what="the refund")

    assert w3_of(a).eth.get_balance(refund_to) == WEI
    assert Deposit.objects.get(to_address=order.global_address).from_address == ""


def test_with_no_refund_address_the_refund_waits_for_staff_then_goes_where_they_say(
    devnets, admin_client, staff
):
    a, b = devnets
    order_id, _ = checkout(admin_client, a[1], b[1], "mint_nft")
    order = Order.objects.get(pk=order_id)
    _wallet_pays(a, order.global_address, WEI)

    run_until(
        lambda: Incident.objects.filter(kind=Incident.Kind.UNATTRIBUTED).exists(), order_id, what="the hold"
    )
    assert not order.refund_txs.exists()
    listed = staff.get("/admin/orders/unattributeddeposit/")
    assert listed.status_code == 200 and str(order_id) in listed.content.decode()
    deposit = order.deposit_txs.get()

    refused = staff.post(f"/admin/orders/unattributeddeposit/{deposit.pk}/change/", {"refund_to": "0x12"})
    assert refused.status_code == 200 and "0x and 40 hex characters" in refused.content.decode()
    staff_says = random_address()
    saved = staff.post(
        f"/admin/orders/unattributeddeposit/{deposit.pk}/change/", {"refund_to": staff_says.lower()}
    )
    assert saved.status_code == 302

    run_until(lambda: _refunded(order_id), order_id, what="the refund")
    assert w3_of(a).eth.get_balance(staff_says) == WEI
    incident = Incident.objects.get(kind=Incident.Kind.UNATTRIBUTED)
    assert incident.resolved_by.startswith("staff:")
    from django.contrib.admin.models import LogEntry

    assert LogEntry.objects.filter(object_id=str(deposit.pk)).exists()  # who entered it, and when


def test_a_payment_after_the_order_executed_is_refunded_and_listed(devnets, admin_client):
    from tests.orders.devnet_checkout import PAYER, drive, erc20, pay

    a, b = devnets
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)
    drive(order_id, until=("executed",))
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()

    pay(order_id, a, amount=3_000_000)  # the payer's wallet sent it twice
    drive(
        order_id, until=("executed",), also=lambda order: order.refund_txs.filter(status="success").exists()
    )

    assert erc20(a).functions.balanceOf(payer).call() == before  # the second payment came back, to the unit
    data = admin_client.get(f"/orders/{order_id}").json()["data"]
    refunds = [(r["amount"], r["status"], r["chain"]) for r in data["refundTxs"]]
    assert refunds == [("3000000", "success", a[1]["chain_id"])] and data["refundTxs"][0]["txHash"]
    assert data["order"]["status"] == "executed"
    assert [d["amount"] for d in data["depositTxs"]] == ["10000000", "3000000"]
    # The payment completed and stays completed: the duplicate's refund is no payment.failed.
    from webhooks.models import WebhookEvent

    assert list(WebhookEvent.objects.values_list("event_type", flat=True)) == ["payment.completed"]


@pytest.mark.unreconciled("a deposit's balance leaves behind the service's back")
def test_a_refund_is_never_paid_from_the_vaults_own_funds(devnets, admin_client):
    """A deposit the order did not count, whose coins are gone from its address before the sweep (a transfer
    taken back, a database that outlived its devnet): its sweep moves nothing, so nothing is refunded."""
    from chains.models import OutboxTx
    from chains.watcher import scan_chain

    a, b = devnets
    order_id, _ = checkout(admin_client, a[1], b[1], "mint_nft")
    order = Order.objects.get(pk=order_id)
    w3 = w3_of(a)
    payer = w3.eth.accounts[5]
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": payer, "to": order.global_address, "value": WEI})
    )
    run_until(lambda: (scan_chain(31337), order.deposit_txs.exists())[1], what="the deposit")
    w3.provider.make_request("anvil_setBalance", [order.global_address, "0x0"])  # the coins are gone

    run_until(
        lambda: Incident.objects.filter(kind=Incident.Kind.SWEEP_SHORT, subject=f"order:{order_id}").exists(),
        order_id,
        what="the incident",
    )
    deposit = order.deposit_txs.get()
    assert not OutboxTx.objects.filter(key__startswith=f"order:{order_id}:refund").exists()
    assert not order.refund_txs.exists() and deposit.refund_reason == "wrong_token"


@pytest.mark.parametrize("bad", ["0x12", "0x" + "00" * 20, 7, "not an address"])
def test_a_bad_refund_address_is_refused_and_nothing_is_written(api_client, tokens, bad):
    from tests.orders.conftest import order_body

    response = api_client.post("/orders", order_body(refundAddress=bad), format="json")
    body = response.json()
    assert response.status_code == 400 and body["success"] is False and "refundAddress" in body["message"]
    assert Order.objects.count() == 0
