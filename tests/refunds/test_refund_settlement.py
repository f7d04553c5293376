"""A refund's money on a real devnet: funded by the merchant to the refund's own address, delivered to the payer
to the unit, everything that did not fund it back to its sender; the vault keeps nothing."""

import re
import time
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.management import call_command
from web3 import Web3

from chains.artifacts import artifact
from chains.models import OutboxTx
from chains.outbox import outbox_poll
from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from checkout.models import Transaction
from ledger.reconcile import reconcile_chain
from refunds.models import Refund, RefundBalance
from refunds.tasks import settle_refund
from tests.factories import TransactionFactory, WebhookEndpointFactory
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db
VAULT = settings.VAULT_ADDRESS
DEVNET = 31337


@pytest.fixture
def devnet_a(devnets_registry, settings):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    call_command("reconcile", "--open-devnets")  # the ledger opened at what the devnets hold now
    return devnets_registry[0]


def token(devnet, symbol):
    w3 = Web3(Web3.HTTPProvider(devnet[0].rpc_url))
    return w3, w3.eth.contract(address=devnet[1]["contracts"][symbol], abi=artifact("TestToken")["abi"])


def settle_until(refund_id, done, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        scan_chain(DEVNET)
        settle_refund(refund_id)  # a refund's or a top-up's, as the worker's task does
        outbox_poll()
        if done():
            return
        time.sleep(0.3)
    pytest.fail(f"refund {refund_id} did not settle: {dict(OutboxTx.objects.values_list('key', 'status'))}")


def mined(*keys):
    return lambda: OutboxTx.objects.filter(key__in=keys, status="mined").count() == len(keys)


def paid_transaction(organization, devnet, payer):
    usdc = devnet[1]["contracts"]["dUSDC"]
    return TransactionFactory(
        organization=organization,
        status="completed",
        chain_id=DEVNET,
        token_address=usdc,
        source_chain_id=DEVNET,
        source_token_address=usdc,
        amount=10_000_000,
        from_address=payer,
    )


def test_a_partial_refund_reaches_the_payer_to_the_unit_and_the_rest_goes_back(
    admin_client, organization, devnet_a
):
    w3, usdc = token(devnet_a, "dUSDC")
    _, weth = token(devnet_a, "dWETH")
    payer, merchant, stranger = (w3.eth.accounts[n] for n in (1, 2, 3))
    WebhookEndpointFactory(organization=organization, events=["*"])
    paid = paid_transaction(organization, devnet_a, payer)
    body = admin_client.post(
        "/api/v1/refunds", {"transaction": paid.id, "amount": "4000000"}, format="json"
    ).json()
    before = {who: usdc.functions.balanceOf(who).call() for who in (payer, merchant, VAULT)}
    weth_before = (weth.functions.balanceOf(stranger).call(), weth.functions.balanceOf(VAULT).call())

    # the merchant sends half a unit more than the refund; someone sends another token to its address
    funding = devnet_transfer(
        chain=devnet_a[0], token=usdc.address, to=body["funding"]["address"], amount=4_500_000, from_account=2
    )
    devnet_transfer(
        chain=devnet_a[0], token=weth.address, to=body["funding"]["address"], amount=10**17, from_account=3
    )
    refund = Refund.objects.get(pk=body["id"])
    returns = lambda: [f"refund:{refund.id}:return:{d.deposit_id}" for d in refund.deposits.all()]  # noqa: E731
    settle_until(
        refund.id, lambda: len(returns()) == 2 and mined(f"refund:{refund.id}:delivery", *returns())()
    )

    after = admin_client.get(f"/api/v1/refunds/{refund.id}").json()
    delivery = OutboxTx.objects.get(key=f"refund:{refund.id}:delivery")
    assert after["status"] == "succeeded"
    assert after["tx_hashes"] == [
        {"chain_id": DEVNET, "tx_hash": funding, "kind": "funding"},
        {"chain_id": DEVNET, "tx_hash": delivery.tx_hash, "kind": "delivery"},
    ]
    assert usdc.functions.balanceOf(payer).call() == before[payer] + 4_000_000
    assert usdc.functions.balanceOf(merchant).call() == before[merchant] - 4_000_000  # the extra came back
    assert usdc.functions.balanceOf(VAULT).call() == before[VAULT]
    assert (weth.functions.balanceOf(stranger).call(), weth.functions.balanceOf(VAULT).call()) == weth_before

    events = list(WebhookEvent.objects.filter(subject=refund.id).order_by("created_at", "pk"))
    assert [(e.event_type, e.data["status"]) for e in events] == [
        ("refund.created", "requires_funding"),
        ("refund.updated", "pending"),
        ("refund.succeeded", "succeeded"),
    ]
    assert Transaction.objects.get(pk=paid.pk).amount_refunded == 4_000_000
    rows = admin_client.get(f"/api/v1/balance-transactions?source_id={paid.id}").json()["data"]
    assert [(r["type"], r["amount"], r["net"]) for r in rows] == [("refund", "-4000000", "-4000000")]

    sent = dict(OutboxTx.objects.values_list("key", "tx_hash"))
    for _ in range(2):  # settling again asks for nothing new
        settle_refund(refund.id)
    assert dict(OutboxTx.objects.values_list("key", "tx_hash")) == sent
    run = reconcile_chain(DEVNET)  # the refund's address, the vault: the ledger agrees with the chain
    assert run.ok, (run.error, run.rows)


def test_a_refund_canceled_before_it_was_funded_in_full_sends_back_what_arrived(
    admin_client, organization, devnet_a
):
    w3, usdc = token(devnet_a, "dUSDC")
    payer, merchant = w3.eth.accounts[1], w3.eth.accounts[2]
    paid = paid_transaction(organization, devnet_a, payer)
    body = admin_client.post(
        "/api/v1/refunds", {"transaction": paid.id, "amount": "4000000"}, format="json"
    ).json()
    before = {who: usdc.functions.balanceOf(who).call() for who in (payer, merchant, VAULT)}
    devnet_transfer(
        chain=devnet_a[0], token=usdc.address, to=body["funding"]["address"], amount=1_000_000, from_account=2
    )
    refund = Refund.objects.get(pk=body["id"])
    deadline = time.monotonic() + 30
    while not refund.deposits.exists() and time.monotonic() < deadline:
        scan_chain(DEVNET)
        time.sleep(0.3)
    assert admin_client.get(f"/api/v1/refunds/{refund.id}").json()["status"] == "requires_funding"

    assert admin_client.post(f"/api/v1/refunds/{refund.id}/cancel").json()["status"] == "canceled"
    deposit = refund.deposits.get().deposit_id
    settle_until(refund.id, mined(f"refund:{refund.id}:unfunded:{deposit}"))

    assert usdc.functions.balanceOf(merchant).call() == before[merchant]
    assert usdc.functions.balanceOf(payer).call() == before[payer]
    assert usdc.functions.balanceOf(VAULT).call() == before[VAULT]
    assert not OutboxTx.objects.filter(key=f"refund:{refund.id}:delivery").exists()
    assert reconcile_chain(DEVNET).ok


def test_a_top_up_funds_the_balance_once_the_vault_holds_it_and_a_refund_from_it_needs_no_deposit(
    admin_client, organization, devnet_a
):
    w3, usdc = token(devnet_a, "dUSDC")
    _, weth = token(devnet_a, "dWETH")
    payer, stranger = w3.eth.accounts[1], w3.eth.accounts[3]
    top_up = admin_client.post(
        "/api/v1/refund-balance/top-ups", {"chain_id": DEVNET, "token_address": usdc.address}, format="json"
    ).json()
    assert (top_up["object"], top_up["credited"]) == ("refund_balance_top_up", "0")
    before = {who: usdc.functions.balanceOf(who).call() for who in (payer, VAULT)}
    weth_before = weth.functions.balanceOf(stranger).call()
    for amount in (2_000_000, 3_000_000):  # two transfers add up
        devnet_transfer(
            chain=devnet_a[0], token=usdc.address, to=top_up["address"], amount=amount, from_account=2
        )
    devnet_transfer(
        chain=devnet_a[0], token=weth.address, to=top_up["address"], amount=10**17, from_account=3
    )

    def balance():
        return {(r.chain_id, r.token_address): str(r.amount) for r in RefundBalance.objects.all()}

    def returned():
        return OutboxTx.objects.filter(key__startswith=f"refund:{top_up['id']}:return:", status="mined")

    settle_until(
        top_up["id"], lambda: balance() == {(DEVNET, usdc.address): "5000000"} and returned().exists()
    )
    assert weth.functions.balanceOf(stranger).call() == weth_before  # another token went back
    assert usdc.functions.balanceOf(VAULT).call() == before[VAULT] + 5_000_000
    rows = admin_client.get(f"/api/v1/balance-transactions?source_id={top_up['id']}").json()["data"]
    assert sorted((r["type"], r["amount"]) for r in rows) == [
        ("refund_balance", "2000000"),
        ("refund_balance", "3000000"),
    ]

    run = reconcile_chain(DEVNET)  # the vault holds what the balance owes
    owed = [r for r in run.rows if r["kind"] == "refund_balance"]
    assert run.ok and [(r["token"], r["expected"], r["actual"]) for r in owed] == [
        (usdc.address.lower(), "5000000", "5000000")
    ]

    paid = paid_transaction(organization, devnet_a, payer)
    body = admin_client.post(
        "/api/v1/refunds", {"transaction": paid.id, "amount": "3000000"}, format="json"
    ).json()
    assert (body["status"], body["funding"]["method"]) == ("pending", "balance")
    settle_until(body["id"], mined(f"refund:{body['id']}:delivery"))

    assert admin_client.get(f"/api/v1/refunds/{body['id']}").json()["status"] == "succeeded"
    assert usdc.functions.balanceOf(payer).call() == before[payer] + 3_000_000
    assert usdc.functions.balanceOf(VAULT).call() == before[VAULT] + 2_000_000  # what the balance still holds
    shown = admin_client.get("/api/v1/refund-balance").json()
    assert [(r["chain_id"], r["token_address"], r["amount"]) for r in shown["data"]] == [
        (DEVNET, usdc.address, "2000000")
    ]
    for _ in range(2):  # settling the top-up again credits nothing twice
        settle_until(top_up["id"], lambda: True)
    assert balance() == {(DEVNET, usdc.address): "2000000"}

    # What is left is withdrawn by an admin to an address they confirmed
    from platform_api.context import RequestContext
    from refunds.services import refund_balance_withdraw

    to = w3.eth.accounts[4]
    to_before = usdc.functions.balanceOf(to).call()
    ctx = RequestContext(
        organization=organization, api_key=None, ip_address="", method="", path="", actor="member:m"
    )
    withdrawal = refund_balance_withdraw(
        ctx=ctx,
        organization=organization,
        chain_id=DEVNET,
        token_address=usdc.address,
        amount=2_000_000,
        address=to,
    )
    assert balance() == {(DEVNET, usdc.address): "0"}
    settle_until(withdrawal.id, mined(f"refund:{withdrawal.id}:withdrawal"))
    withdrawal.refresh_from_db()
    assert withdrawal.status == "succeeded" and withdrawal.tx_hash
    assert usdc.functions.balanceOf(to).call() == to_before + 2_000_000
    assert (
        usdc.functions.balanceOf(VAULT).call() == before[VAULT]
    )  # the vault keeps nothing of the merchant's
    rows = admin_client.get(f"/api/v1/balance-transactions?source_id={withdrawal.id}").json()["data"]
    assert [(r["type"], r["amount"]) for r in rows] == [("refund_balance", "-2000000")]
    run = reconcile_chain(DEVNET)
    assert run.ok, (run.error, run.rows)


def test_a_refund_to_another_chain_and_token_is_delivered_by_an_order_to_the_unit(
    admin_client, organization, devnets_registry, settings
):
    from orders.models import Order
    from orders.settlement import settle_order
    from tests.orders.devnet_checkout import run_until, service_round

    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    call_command("reconcile", "--open-devnets")
    (chain_a, a), (chain_b, b) = devnets_registry
    w3, usdc = token(devnets_registry[0], "dUSDC")
    _, weth_b = token(devnets_registry[1], "dWETH")
    payer, merchant = w3.eth.accounts[1], w3.eth.accounts[2]
    paid = paid_transaction(organization, devnets_registry[0], payer)
    destination = {"chain_id": b["chain_id"], "token_address": b["contracts"]["dWETH"], "address": payer}
    response = admin_client.post(
        "/api/v1/refunds",
        {"transaction": paid.id, "amount": "5000000", "destination": destination},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    quoted = body["destination"].pop("quoted_amount")
    assert body["destination"] | {"amount": None} == {**destination, "amount": None}
    assert body["destination"]["amount"] is None  # known once it is funded and quoted
    # What the payer will receive is quoted before the merchant funds it, and the merchant's page says so.
    assert int(quoted) > 0
    from tests.dashboard.conftest import make_member, signed_in

    page = signed_in(make_member(organization)).get(f"/dashboard/refunds/{body['id']}").content.decode()
    shown = re.search(r'id="refund-receives">at least ([0-9.]+) dWETH', page)
    assert shown is not None, page
    assert Decimal(shown.group(1)) == Decimal(quoted) / 10**18
    before = {
        "payer_weth": weth_b.functions.balanceOf(payer).call(),
        "merchant": usdc.functions.balanceOf(merchant).call(),
        "vault": usdc.functions.balanceOf(VAULT).call(),
        "solver_weth": weth_b.functions.balanceOf(settings.SOLVER_ADDRESS).call(),
    }
    devnet_transfer(
        chain=chain_a, token=usdc.address, to=body["funding"]["address"], amount=5_000_000, from_account=2
    )

    refund = Refund.objects.get(pk=body["id"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        service_round()
        settle_refund(refund.id)
        refund.refresh_from_db()
        if refund.order_id is not None:
            settle_order(refund.order_id)
        if refund.status in ("succeeded", "failed"):
            break
        time.sleep(0.3)
    after = admin_client.get(f"/api/v1/refunds/{refund.id}").json()
    assert after["status"] == "succeeded", after
    order = Order.objects.get(pk=refund.order_id)
    delivered = int(order.settlement["dstAmount"])
    assert (order.owner, order.src_amount, order.dst_chain) == ("refund", 5_000_000, b["chain_id"])
    assert after["destination"]["amount"] == str(delivered) and delivered > 0
    assert delivered >= int(quoted)  # never below what was quoted before funding (the same fixed prices)
    assert weth_b.functions.balanceOf(payer).call() == before["payer_weth"] + delivered  # to the unit
    assert usdc.functions.balanceOf(merchant).call() == before["merchant"] - 5_000_000
    # The vault ends with the merchant's 5 dUSDC on Devnet A (it paid the order, whose sweep brought them
    # back, once mined: the solver delivers beside the sweep, so the order can end first); the solver
    # delivered the payer's dWETH on Devnet B from its own holdings.
    run_until(
        lambda: OutboxTx.objects.filter(key=f"order:{order.pk}:sweep", status="mined").exists(),
        what="the order's sweep mined",
    )
    assert usdc.functions.balanceOf(VAULT).call() == before["vault"] + 5_000_000
    assert weth_b.functions.balanceOf(settings.SOLVER_ADDRESS).call() == before["solver_weth"] - delivered
    kinds = [(h["kind"], h["chain_id"]) for h in after["tx_hashes"]]
    assert kinds == [("funding", a["chain_id"]), ("delivery", b["chain_id"])]
    for _ in range(3):  # the watcher's confirmed blocks past what settlement sent, on both chains
        service_round()
        for chain in (chain_a, chain_b):
            Web3(Web3.HTTPProvider(chain.rpc_url)).provider.make_request("evm_mine", [])
    service_round()
    for chain_id in (a["chain_id"], b["chain_id"]):
        run = reconcile_chain(chain_id)
        assert run.ok, (run.error, [r for r in run.rows if int(r["difference"])])


@pytest.mark.unreconciled("the vault is made to hold less than the refund balances owe")
def test_reconcile_reports_a_vault_holding_less_than_the_refund_balances_owe(organization, devnet_a):
    from tests.factories import RefundBalanceFactory

    _, weth = token(devnet_a, "dWETH")
    held = weth.functions.balanceOf(VAULT).call()
    RefundBalanceFactory(
        organization=organization, chain_id=DEVNET, token_address=weth.address, amount=held + 1
    )

    run = reconcile_chain(DEVNET)

    short = [r for r in run.rows if r["kind"] == "refund_balance"]
    assert not run.ok and [(r["expected"], r["actual"], r["difference"]) for r in short] == [
        (str(held + 1), str(held), "-1")
    ]
