"""The production relay adapter against a local HTTP server speaking the relay provider's API, with the
origin-chain transactions it returns sent through the outbox on a real devnet."""

import json

import pytest
from django.conf import settings
from werkzeug import Response

from chains.artifacts import encode_call
from chains.models import OutboxTx
from chains.wallet import devnet_transfer
from orders.models import Order
from tests.orders.devnet_checkout import (
    PAYER,
    checkout,
    drive,
    erc20,
    pay,
    random_address,
    service_round,
    w3_of,
)

pytestmark = pytest.mark.django_db

REQUEST_ID = "0x" + "5e" * 32
FILL_HASH = "0x" + "f1" * 32
DEPOSITORY = random_address()


def serve_quotes(httpserver, devnet, seen: list):
    """POST /quote: details for pricing, and one step that pays the relay's depository on Devnet A."""
    token = devnet[1]["contracts"]["dUSDC"]

    def handler(request):
        body = request.get_json()
        seen.append(body)
        amount = int(body["amount"])
        step = {
            "id": "deposit",
            "kind": "transaction",
            "requestId": REQUEST_ID,
            "items": [
                {
                    "status": "incomplete",
                    "data": {
                        "chainId": 31337,
                        "to": token,
                        "value": "0",
                        "data": encode_call("TestToken", "transfer", DEPOSITORY, amount),
                    },
                }
            ],
        }
        currency = {"amount": str(amount), "currency": {"decimals": 6}}
        details = {"currencyIn": currency, "currencyOut": currency}
        return Response(json.dumps({"steps": [step], "details": details}), content_type="application/json")

    httpserver.expect_request(
        "/quote/v2", method="POST", headers={"x-api-key": "relay-key"}
    ).respond_with_handler(handler)


def serve_status(httpserver, status: str, fill: str = FILL_HASH):
    httpserver.expect_request(
        "/intents/status/v3", method="GET", query_string={"requestId": REQUEST_ID}
    ).respond_with_json(
        {
            "status": status,
            "inTxHashes": [],
            "txHashes": [fill],
            "originChainId": 31337,
            "destinationChainId": 31338,
        }
    )


def test_the_vault_pays_the_relay_through_the_outbox_and_the_fill_is_recorded(
    relay, devnets_registry, admin_client
):
    a, b = devnets_registry
    quotes: list = []
    serve_quotes(relay, a, quotes)
    fill = a_fill_on(b)
    serve_status(relay, "success", fill)
    order_id, body = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)

    order = drive(order_id)

    assert order.status == "executed", order.error_details
    fee = int(order.src_amount) * order.fee["finalFeeBps"] // 10_000
    sent = int(order.src_amount) - fee  # the vault keeps the service's fee
    assert erc20(a).functions.balanceOf(DEPOSITORY).call() == sent
    assert quotes[-1] | {"amount": None} == {
        "user": settings.VAULT_ADDRESS,
        "recipient": body["recipientAddress"],
        "originChainId": 31337,
        "destinationChainId": 31338,
        "originCurrency": body["srcTokenAddress"],
        "destinationCurrency": body["dstTokenAddress"],
        "amount": None,
        "tradeType": "EXACT_INPUT",
        "refundTo": settings.VAULT_ADDRESS,  # without it the provider's automatic refunds are off
    }
    assert int(quotes[-1]["amount"]) == sent
    assert list(order.relay_txs.values_list("chain", "tx_hash", "status")) == [(31338, fill, "success")]
    assert OutboxTx.objects.get(key=f"order:{order_id}:relay:0").status == "mined"
    assert order.settlement["relay"]["requestId"] == REQUEST_ID


def a_fill_on(devnet) -> str:
    """A transaction the destination chain shows (a fill is counted only then): the provider's solver pays."""
    w3 = w3_of(devnet)
    tx = w3.eth.send_transaction({"from": w3.eth.accounts[8], "to": random_address(), "value": 1})
    w3.eth.wait_for_transaction_receipt(tx)
    return "0x" + bytes(tx).hex()


def test_a_relay_that_refunds_the_vault_refunds_the_payer_once_its_refund_is_on_chain(
    relay, devnets_registry, admin_client
):
    """The payer's refund waits for the provider's refund to the vault to be on the origin chain, confirmed: the
    vault never fronts it with other orders' money (in a rehearsal, refunds sent at once reverted)."""
    a, b = devnets_registry
    serve_quotes(relay, a, [])
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    order = Order.objects.get(pk=order_id)
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    late = {"refund": FILL_HASH}  # not on the chain yet
    relay.expect_request("/intents/status/v3", method="GET").respond_with_handler(
        lambda request: Response(
            json.dumps({"status": "refund", "inTxHashes": [], "txHashes": [late["refund"]]}),
            content_type="application/json",
        )
    )
    pay(order_id, a)
    drive(order_id, until=("refunding",))
    for _ in range(3):
        service_round(order_id)
    assert not OutboxTx.objects.filter(key__startswith=f"order:{order_id}:refund:").exists()  # it waits

    # The provider gives the vault its money back (here: a payer stands in for the provider).
    late["refund"] = devnet_transfer(
        chain=a[0],
        token=order.src_token_address,
        to=settings.VAULT_ADDRESS,
        amount=int(order.src_amount),
        from_account=2,
    )
    order.relay_txs.filter(status="refund").update(
        tx_hash=late["refund"]
    )  # as the provider's status says now
    order = drive(order_id, until=("refunded",))

    assert order.error_details.startswith("RELAY_FAILED: the relay ended refund")
    attempts = OutboxTx.objects.filter(key__startswith=f"order:{order_id}:refund:")
    assert [tx.status for tx in attempts] == ["mined"]  # once, and it did not revert
    assert order.refund_txs.filter(status="success").count() == 1
    assert list(order.relay_txs.values_list("chain", "status")) == [(31337, "refund")]  # on the origin chain
    assert erc20(a).functions.balanceOf(payer).call() == before


def test_a_call_the_provider_says_it_made_counts_only_once_the_destination_chain_shows_it(
    relay, devnets_registry, admin_client
):
    """`success` with a fill hash Devnet B has never seen: the order stays `executing`, never `executed`."""
    a, b = devnets_registry
    serve_quotes(relay, a, [])
    serve_status(relay, "success")  # FILL_HASH is no transaction on Devnet B
    order_id, _ = checkout(admin_client, a[1], b[1], "mint_nft")
    pay(order_id, a)

    drive(order_id, until=("executing",))
    for _ in range(3):
        service_round(order_id)

    order = Order.objects.get(pk=order_id)
    assert (order.status, order.execute_tx) == ("executing", None)
