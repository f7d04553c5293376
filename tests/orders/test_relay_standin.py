"""The relay provider: the vault's deposits and the contract calls of every type, against a stand-in written from the provider's documentation
(tests/orders/relay_standin.py): an ERC-20 deposit is `approve(depository, amount)` then `depositErc20`, and the
fill comes on the other devnet. Orders paid together must not take each other's allowance (issue 43)."""

from __future__ import annotations

import pytest
from django.conf import settings

from chains.artifacts import artifact
from chains.models import OutboxTx
from orders.models import Order
from tests.orders.devnet_checkout import (
    PAYER,
    checkout,
    drive,
    erc20,
    pay,
    random_address,
    receipt_on,
    run_until,
    w3_of,
)
from tests.orders.relay_standin import RelayStandIn

pytestmark = pytest.mark.django_db

ORDERS = 20


@pytest.fixture
def standin(devnets_registry, httpserver, settings):
    a, b = devnets_registry
    settings.RELAY_PROVIDER = "relay"
    settings.RELAY_API_URL = httpserver.url_for("")
    settings.RELAY_API_KEY = ""
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    settings.REFUND_RETRY_SECONDS = 0
    return RelayStandIn(origin=w3_of(a), destination=w3_of(b)).serve(httpserver)


def test_the_standin_reproduces_the_race_exact_allowances_run_into(standin, devnets_registry):
    """Two exact approvals mined before either deposit: the first deposit spends the second's allowance and the
    second deposit reverts (`transferFrom`), as with the provider itself."""
    a, _ = devnets_registry
    w3, token = w3_of(a), erc20(a)
    user = w3.eth.accounts[PAYER]
    depository = standin.depository
    mined = w3.eth.wait_for_transaction_receipt
    for _ in range(2):
        mined(token.functions.approve(depository.address, 5).transact({"from": user}))
    first = depository.functions.depositErc20(user, token.address, 5, b"\x01" * 32).transact({"from": user})
    second = depository.functions.depositErc20(user, token.address, 5, b"\x02" * 32).transact(
        {"from": user, "gas": 200_000}
    )
    assert (mined(first)["status"], mined(second)["status"]) == (1, 0)


def test_twenty_orders_paid_in_one_block_all_execute_through_the_relay(
    standin, devnets_registry, admin_client
):
    a, b = devnets_registry
    orders = [checkout(admin_client, a[1], b[1], "swap", amount=1_000_000 + n) for n in range(ORDERS)]
    w3, token = w3_of(a), erc20(a)
    payer = w3.eth.accounts[PAYER]
    depository_before = token.functions.balanceOf(standin.depository.address).call()
    w3.provider.make_request("evm_setIntervalMining", [0])  # hold the blocks: every payment in one
    try:
        hashes = []
        for order_id, _ in orders:
            order = Order.objects.get(pk=order_id)
            hashes.append(
                token.functions.transfer(order.global_address, int(order.src_amount)).transact(
                    {"from": payer}
                )
            )
        w3.provider.make_request("evm_mine", [])
    finally:
        w3.provider.make_request("evm_setIntervalMining", [1])
    blocks = {w3.eth.wait_for_transaction_receipt(h)["blockNumber"] for h in hashes}
    assert len(blocks) == 1

    ids = [order_id for order_id, _ in orders]
    run_until(
        lambda: (
            Order.objects.filter(pk__in=ids, status__in=("executed", "refunded", "failure")).count() == ORDERS
        ),
        *ids,
        timeout=240,
        what="every order ending",
    )

    ended = dict(Order.objects.filter(pk__in=ids).values_list("pk", "status"))
    errors = [o.error_details for o in Order.objects.filter(pk__in=ids).exclude(status="executed")]
    assert set(ended.values()) == {"executed"}, errors
    # One standing allowance for the depository, asked for once and mined; no order sent an approval of its own.
    allowances = OutboxTx.objects.filter(key__startswith="relay:allowance:")
    assert [tx.status for tx in allowances] == ["mined"]
    assert not OutboxTx.objects.filter(key__startswith="order:", data__startswith="0x095ea7b3").exists()
    # Every deposit reached the depository, each of its own amount; every recipient got its fill on Devnet B.
    sent = 0
    for order in Order.objects.filter(pk__in=ids):
        fee = int(order.src_amount) * order.fee["finalFeeBps"] // 10_000
        sent += int(order.src_amount) - fee
        fill = order.relay_txs.get()
        assert (fill.chain, fill.status) == (31338, "success")
        assert erc20(b).functions.balanceOf(order.recipient_address).call() == int(order.src_amount) - fee
    assert token.functions.balanceOf(standin.depository.address).call() - depository_before == sent
    assert {quote["refundTo"] for quote in standin.quotes} == {settings.VAULT_ADDRESS}


def test_a_fill_that_fails_is_refunded_on_the_origin_chain_and_the_payer_gets_it_back(
    standin, devnets_registry, admin_client
):
    a, b = devnets_registry
    standin.fail_fills = True
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",), timeout=120)

    assert order.error_details.startswith("RELAY_FAILED: the relay ended refund")
    refund = order.relay_txs.get()
    assert (refund.chain, refund.status) == (31337, "refund")  # the provider's refund, where it happened
    assert erc20(a).functions.balanceOf(payer).call() == before  # to the unit


CONTRACT_TYPES = ["mint_nft", "join_tournament", "fund_tournament", "custom", "custom_exact_in"]


def _tournament(devnet):
    return w3_of(devnet).eth.contract(
        address=devnet[1]["contracts"]["Tournament"], abi=artifact("Tournament")["abi"]
    )


@pytest.mark.parametrize("order_type", CONTRACT_TYPES)
def test_every_contract_type_executes_through_the_relay_providers_multicaller(
    standin, devnets_registry, admin_client, order_type
):
    """The call travels in the quote (`txs`: the approval, then the call) and the provider's multicaller makes it
    on Devnet B in its fill: the order is `executed` with that fill as its executeTx, and the call's effect is
    on the chain (issue 43)."""
    a, b = devnets_registry
    recipient = random_address()
    pool_before = _tournament(b).functions.prizePool().call()
    order_id, _ = checkout(admin_client, a[1], b[1], order_type, recipient=recipient)
    pay(order_id, a)

    order = drive(order_id, timeout=120)

    assert order.status == "executed", order.error_details
    quote = next(q for q in reversed(standin.quotes) if q.get("txs"))
    price = int(order.settlement["dstAmount"])
    assert (quote["tradeType"], quote["amount"], quote["txsGasLimit"]) == (
        "EXACT_OUTPUT",
        str(price),
        settings.RELAY_TXS_GAS_LIMIT,
    )
    assert quote["txs"][0]["data"].startswith("0x095ea7b3")  # the destination token approved for the call
    assert (order.execute_tx["chainId"], order.execute_tx["txHash"]) == (31338, order.relay_txs.get().tx_hash)
    assert receipt_on(b, order.execute_tx["txHash"]).status == 1
    contracts = b[1]["contracts"]
    if order_type == "mint_nft":
        nft = w3_of(b).eth.contract(address=contracts["PricedNFT721"], abi=artifact("PricedNFT721")["abi"])
        assert nft.functions.balanceOf(recipient).call() == 1
    elif order_type == "join_tournament":
        assert _tournament(b).functions.joined(recipient).call() is True
    else:  # fund, custom (a fund call), custom_exact_in (fund of what arrived)
        assert _tournament(b).functions.prizePool().call() - pool_before == price
    assert not OutboxTx.objects.filter(key=f"order:{order_id}:execute").exists()  # no call of our own


def test_a_contract_call_that_reverts_at_the_provider_is_refunded_to_the_unit(
    standin, devnets_registry, admin_client
):
    a, b = devnets_registry
    reverts = b[1]["contracts"]["AlwaysReverts"]
    order_id, _ = checkout(
        admin_client, a[1], b[1], "custom", to=reverts, spenderAddress=reverts, data="0x12345678"
    )
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",), timeout=120)

    assert order.error_details.startswith("RELAY_FAILED: the relay ended refund")
    assert erc20(a).functions.balanceOf(payer).call() == before
