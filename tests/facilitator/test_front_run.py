"""A front-run authorization is the order's deposit, and money no owner watched shows in `reconcile` (issue 64,
item 2). The attacker's probe: the payer submits its own signed authorization to the token, the watcher reads
past that block, then the payer sends the same payment header to the link. The link answered 200 paid, but
the order made then never counted the transfer (the watcher scans forward from its cursor), expired without a
refund, and the money stayed at its deposit address with `reconcile` silent."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from eth_account import Account
from web3 import Web3

from chains.devnet import devnet_private_key
from chains.eip3009 import transfer_call_data
from chains.models import ChainCursor, Deposit, WatchedAddress
from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from checkout.models import PaymentLink
from facilitator.models import Settlement
from ledger.reconcile import reconcile_chain
from orders.models import Order
from tests.facilitator.signing import authorize
from tests.ledger.test_reconcile import differences, settle_everywhere
from tests.orders.devnet_checkout import drive, random_address

pytestmark = pytest.mark.django_db

PRICE = 2_500_000


@pytest.fixture
def devnets(devnets_registry, settings):
    settings.X402_SETTLE_WAIT_SECONDS = 0
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    call_command("reconcile", "--open-devnets")
    return devnets_registry


def _scanned_past(w3, block: int) -> None:
    """The watcher's cursor past `block`, as a running service's would be by the time the payer retries."""
    for _ in range(10):
        w3.provider.make_request("evm_mine", [])
        scan_chain(31337)
        if ChainCursor.objects.get(pk=31337).scanned_to >= block:
            return
    pytest.fail(f"the watcher did not read block {block}")


def test_an_authorization_the_payer_submitted_before_retrying_becomes_the_orders_deposit(
    devnets, client, organization
):
    (chain, a), _ = devnets
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    link = PaymentLink.objects.create(
        organization=organization,
        name="A report",
        token_address=a["contracts"]["dUSDC"],
        chain_id=31337,
        recipient_address=random_address(),
        amount=PRICE,
    )
    offer = json.loads(
        base64.b64decode(client.get(f"/x402/pay/{link.short_code}").headers["PAYMENT-REQUIRED"])
    )["accepts"][0]
    payer = Account.from_key(devnet_private_key(2))
    payload = authorize(payer, to=offer["payTo"], value=offer["amount"], token=offer["asset"], chain_id=31337)
    own = transfer_call_data(payload["authorization"], bytes.fromhex(payload["signature"][2:]), vrs=True)
    receipt = w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": payer.address, "to": offer["asset"], "data": own})
    )
    _scanned_past(w3, receipt.blockNumber)
    header = base64.b64encode(json.dumps({"x402Version": 2, "accepted": offer, "payload": payload}).encode())

    paid = client.get(f"/x402/pay/{link.short_code}", HTTP_PAYMENT_SIGNATURE=header.decode())

    assert paid.status_code == 200, paid.json()
    assert Settlement.objects.get().submitted_by_us is False
    order = drive(paid.json()["orderId"])
    assert order.status == "executed", order.error_details
    deposit = Deposit.objects.get(to_address=order.global_address)
    assert (deposit.tx_hash, int(deposit.amount)) == (
        "0x" + bytes(receipt.transactionHash).hex(),
        int(offer["amount"]),
    )
    assert WatchedAddress.objects.get(address=order.global_address).look_back_from is None
    settle_everywhere(devnets)
    assert differences(reconcile_chain(31337)) == {}


@pytest.mark.unreconciled("money is sent where nothing watches")
def test_money_at_an_address_no_owner_watches_any_more_is_a_difference_in_reconcile(devnets):
    (chain, a), _ = devnets
    address = random_address()
    WatchedAddress.objects.create(  # an order's address, its watch over
        chain_id=31337, address=address, owner="order:gone", watch_until=timezone.now() - timedelta(days=1)
    )
    devnet_transfer(chain=chain, token=a["contracts"]["dUSDC"], to=address, amount=1234, from_account=1)
    settle_everywhere(devnets)

    run = reconcile_chain(31337)

    assert differences(run) == {("deposit_address", a["contracts"]["dUSDC"].lower()): 1234}
    assert not Order.objects.exists()
