"""A quick payment's money on a real devnet: the amount to the recipient, everything else back to its sender."""

import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from web3 import Web3

from chains.artifacts import artifact
from chains.models import OutboxTx
from chains.outbox import outbox_poll
from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from quickpay.models import QuickPayment
from quickpay.services import quick_payments_expire
from quickpay.settlement import quick_payment_settle
from tests.orders.devnet_checkout import random_address
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db
VAULT = settings.VAULT_ADDRESS


@pytest.fixture
def devnet_a(devnets_registry, settings):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    return devnets_registry[0]


def token(devnet, symbol):
    w3 = Web3(Web3.HTTPProvider(devnet[0].rpc_url))
    return w3, w3.eth.contract(address=devnet[1]["contracts"][symbol], abi=artifact("TestToken")["abi"])


def create(api_client, devnet, recipient, amount="2500000"):
    body = {
        "amount": amount,
        "token_address": devnet[1]["contracts"]["dUSDC"],
        "chain_id": 31337,
        "recipient_address": recipient,
    }
    response = api_client.post("/api/v1/quick-pay", body, format="json")
    assert response.status_code == 201, response.content
    return QuickPayment.objects.get(pk=response.json()["id"])


def settle_until(payment_id, keys, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        scan_chain(31337)
        quick_payment_settle(payment_id)
        outbox_poll()
        mined = set(OutboxTx.objects.filter(key__in=keys, status="mined").values_list("key", flat=True))
        if mined == set(keys):
            return
        time.sleep(0.3)
    pytest.fail(f"not mined: {set(keys) - mined}")


def test_the_recipient_gets_the_amount_and_the_rest_goes_back(admin_client, devnet_a):
    w3, usdc = token(devnet_a, "dUSDC")
    _, weth = token(devnet_a, "dWETH")
    accounts = w3.eth.accounts
    recipient = random_address()
    payment = create(admin_client, devnet_a, recipient)  # a merchant's: its balance transactions show it
    before = {n: usdc.functions.balanceOf(accounts[n]).call() for n in (1, 2)}
    weth_before = weth.functions.balanceOf(accounts[3]).call()
    vault_before = (usdc.functions.balanceOf(VAULT).call(), weth.functions.balanceOf(VAULT).call())
    devnet_transfer(
        chain=devnet_a[0],
        token=payment.token_address,
        to=payment.deposit_address,
        amount=1_000_000,
        from_account=1,
    )
    devnet_transfer(
        chain=devnet_a[0],
        token=payment.token_address,
        to=payment.deposit_address,
        amount=2_000_000,
        from_account=2,
    )
    devnet_transfer(
        chain=devnet_a[0],
        token=devnet_a[1]["contracts"]["dWETH"],
        to=payment.deposit_address,
        amount=10**18,
        from_account=3,
    )

    deposits = lambda: {d.deposit.from_address: d.pk for d in payment.deposits.select_related("deposit")}  # noqa: E731
    deadline = time.monotonic() + 30
    while len(deposits()) < 3 and time.monotonic() < deadline:
        scan_chain(31337)
        time.sleep(0.3)
    ids = {accounts.index(Web3.to_checksum_address(a)): pk for a, pk in deposits().items()}
    refunds = [f"quickpay:{payment.id}:refund:{payment.deposits.get(pk=ids[n]).deposit_id}" for n in (2, 3)]
    payout = f"quickpay:{payment.id}:payout"
    settle_until(payment.id, [payout, *refunds])
    completed = WebhookEvent.objects.get(subject=payment.id)  # told once the recipient has the money
    assert (completed.event_type, completed.data["amount"]) == ("payment.completed", "2500000")
    assert completed.created_at >= OutboxTx.objects.get(key=payout).finished_at

    payment.refresh_from_db()
    assert payment.status == "paid"
    assert usdc.functions.balanceOf(recipient).call() == 2_500_000
    assert usdc.functions.balanceOf(accounts[1]).call() == before[1] - 1_000_000
    assert (
        usdc.functions.balanceOf(accounts[2]).call() == before[2] - 1_500_000
    )  # 0.5 beyond the amount came back
    assert weth.functions.balanceOf(accounts[3]).call() == weth_before  # another token came back
    # the vault swept all of it and paid all of it out: it keeps nothing of either token
    assert (usdc.functions.balanceOf(VAULT).call(), weth.functions.balanceOf(VAULT).call()) == vault_before
    balance = {
        (r["type"], r["token_address"].lower()): (r["amount"], r["net"])
        for r in admin_client.get(f"/api/v1/balance-transactions?source_id={payment.id}").json()["data"]
    }
    assert balance == {
        ("payment", payment.token_address.lower()): ("2500000", "2500000"),
        ("refund", payment.token_address.lower()): ("-500000", "0"),
        ("refund", devnet_a[1]["contracts"]["dWETH"].lower()): (str(-(10**18)), "0"),
    }
    sent = dict(OutboxTx.objects.values_list("key", "tx_hash"))
    for _ in range(2):  # settling again asks for nothing new
        quick_payment_settle(payment.id)
    assert dict(OutboxTx.objects.values_list("key", "tx_hash")) == sent


def test_what_an_expired_payment_received_goes_back(admin_client, devnet_a):
    w3, usdc = token(devnet_a, "dUSDC")
    payer = w3.eth.accounts[4]
    recipient = random_address()
    payment = create(admin_client, devnet_a, recipient)  # a merchant's: its webhooks are told
    before = usdc.functions.balanceOf(payer).call()
    vault_before = usdc.functions.balanceOf(VAULT).call()
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
    assert quick_payment_settle(payment.id) == {}  # still awaiting the rest: nothing moves yet

    assert quick_payments_expire(now=timezone.now() + timedelta(days=1)) == 1
    deposit_id = payment.deposits.get().deposit_id
    returned = f"quickpay:{payment.id}:return:{deposit_id}"
    settle_until(payment.id, [returned])
    failed = WebhookEvent.objects.get(subject=payment.id)  # told once the payer has it back, with the hash
    assert failed.event_type == "payment.failed"
    assert (failed.data["status"], failed.data["refund_tx_hash"]) == (
        "expired",
        OutboxTx.objects.get(key=returned).tx_hash,
    )

    assert usdc.functions.balanceOf(payer).call() == before
    assert usdc.functions.balanceOf(recipient).call() == 0
    assert usdc.functions.balanceOf(VAULT).call() == vault_before  # swept in, returned in full
    assert not OutboxTx.objects.filter(key=f"quickpay:{payment.id}:payout").exists()
