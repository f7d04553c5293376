"""Orders of every type from Devnet A to Devnet B, priced through POST /orders/quote as a client would."""

from __future__ import annotations

import json
import secrets
import time

import pytest
from web3 import Web3

from chains.artifacts import artifact, encode_call
from chains.devnet import NATIVE, TOKENS
from chains.models import OutboxTx
from chains.outbox import outbox_poll, outbox_send
from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from orders.models import Order
from orders.settlement import settle_order
from webhooks.models import WebhookEvent

PAYER = 1

TOURNAMENT_FUND_ABI = json.dumps([f for f in artifact("Tournament")["abi"] if f.get("name") == "fund"])


def token_shape(deployment: dict, symbol: str) -> dict:
    chain_id = deployment["chain_id"]
    if symbol == "ETH":
        return {
            "chainId": chain_id,
            "address": NATIVE,
            "symbol": "ETH",
            "name": "Ether (devnet)",
            "decimals": 18,
            "metadata": {},
        }
    _, name, decimals, _ = next(t for t in TOKENS if t[0] == symbol)
    return {
        "chainId": chain_id,
        "address": deployment["contracts"][symbol],
        "symbol": symbol,
        "name": name,
        "decimals": decimals,
        "metadata": {},
    }


def random_address() -> str:
    return Web3.to_checksum_address("0x" + secrets.token_hex(20))


def checkout(
    client,
    a: dict,
    b: dict,
    order_type: str,
    *,
    src="dUSDC",
    dst="dUSDC",
    amount=10_000_000,
    recipient=None,
    body_extra=None,
    **payload_overrides,
):
    """(order id, order body): quote then create one order of `order_type` paying `src` on A for B."""
    recipient = recipient or random_address()
    src_token, dst_token = token_shape(a, src), token_shape(b, dst)
    contracts = b["contracts"]
    common = {
        "type": order_type,
        "srcChain": a["chain_id"],
        "dstChain": b["chain_id"],
        "srcTokenAddress": src_token["address"],
        "dstTokenAddress": dst_token["address"],
        "recipientAddress": recipient,
    }
    quote_extra: dict = {"amount": str(amount)}
    if order_type == "swap":
        quote_extra["tradeType"] = "EXACT_INPUT"
    elif order_type == "custom":
        payload = {
            "data": encode_call("Tournament", "fund", amount),
            "to": contracts["Tournament"],
            "spenderAddress": contracts["Tournament"],
            "amount": str(amount),
        }
        quote_extra = {"payload": payload}
    elif order_type == "mint_nft":
        quote_extra = {
            "contractAddress": contracts["PricedNFT721"],
            "contractType": "erc721",
            "price": "5000000",
        }
    elif order_type == "join_tournament":
        quote_extra = {"contractAddress": contracts["Tournament"], "price": "10000000"}
    elif order_type == "fund_tournament":
        quote_extra = {"contractAddress": contracts["Tournament"], "fundAmount": str(amount)}
    quote = _ok(client.post("/orders/quote", {**common, **quote_extra}, format="json"))
    amount_in, amount_out = quote["currencyIn"]["amount"], quote["currencyOut"]["amount"]
    payloads = {
        "swap": {"expectedDstAmount": amount_out},
        "x402_swap": {"expectedDstAmount": str(amount)},
        "duel": {"expectedDstAmount": str(amount)},
        "custom": quote_extra.get("payload"),
        "custom_exact_in": {
            "amount": str(amount),
            "expectedDstAmount": amount_out,
            "functionAbi": TOURNAMENT_FUND_ABI,
            "functionName": "fund",
            "functionArgs": ["{{amount}}"],
            "to": contracts["Tournament"],
            "spenderAddress": contracts["Tournament"],
        },
        "mint_nft": {
            "contractAddress": contracts["PricedNFT721"],
            "tokenId": None,
            "contractType": "erc721",
            "nftPrice": "5000000",
        },
        "join_tournament": {"contractAddress": contracts["Tournament"], "entryPrice": "10000000"},
        "fund_tournament": {"contractAddress": contracts["Tournament"], "fundAmount": str(amount)},
    }
    payload = {**payloads[order_type], **payload_overrides}
    body = {
        **common,
        "srcAmount": amount_in,
        "payload": payload,
        "metadata": {"srcToken": src_token, "dstToken": dst_token},
    }
    if order_type == "mint_nft":
        body["metadata"]["nft"] = {"name": "Devnet NFT"}
    body |= body_extra or {}
    return _ok(client.post("/orders", body, format="json"))["id"], body


def _ok(response) -> dict:
    assert response.status_code == 200, response.content
    return response.json()["data"]


def service_round(*order_ids) -> None:
    """What beat and the workers do in a second: scan both devnets, settle the orders, send what was queued and
    poll the outbox."""
    scan_chain(31337)
    scan_chain(31338)
    for order_id in order_ids:
        settle_order(order_id)
    for tx_id in OutboxTx.objects.filter(status=OutboxTx.Status.QUEUED).values_list("pk", flat=True):
        outbox_send(tx_id)  # what the signer's worker does with the task the commit queued
    outbox_poll()


def run_until(predicate, *order_ids, timeout=60, what="the condition"):
    """Service rounds until `predicate()` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        service_round(*order_ids)
        if predicate():
            return
        time.sleep(0.3)
    pytest.fail(f"{what} did not happen in {timeout} s")


def drive(order_id, *, until=("executed", "refunded", "failure"), also=lambda order: True, timeout=60):
    """Service rounds until the order is in one of `until` and `also(order)` holds; an order that ended waits for
    its transactions still in flight too (the solver delivers beside the sweep, which may be mined after)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        service_round(order_id)
        order = Order.objects.get(pk=order_id)
        if order.status in until and also(order) and (order.status not in ENDED or nothing_in_flight(order)):
            return order
        time.sleep(0.3)
    pytest.fail(f"order {order_id} is still {Order.objects.get(pk=order_id).status}")


ENDED = ("executed", "refunded", "failure")


def nothing_in_flight(order) -> bool:
    return not OutboxTx.objects.filter(
        key__startswith=f"order:{order.pk}:",
        status__in=(OutboxTx.Status.QUEUED, OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST),
    ).exists()


def w3_of(devnet):
    return Web3(Web3.HTTPProvider(devnet[0].rpc_url))


def erc20(devnet, symbol="dUSDC"):
    return w3_of(devnet).eth.contract(
        address=devnet[1]["contracts"][symbol], abi=artifact("TestToken")["abi"]
    )


def pay(order_id, devnet, amount=None):
    order = Order.objects.get(pk=order_id)
    return devnet_transfer(
        chain=devnet[0],
        token=order.src_token_address,
        to=order.global_address,
        amount=int(order.src_amount) if amount is None else amount,
        from_account=PAYER,
    )


def events(order_id, event_type):
    return [
        e.data for e in WebhookEvent.objects.filter(event_type=event_type) if e.data["id"] == str(order_id)
    ]


def receipt_on(devnet, tx_hash):
    return w3_of(devnet).eth.get_transaction_receipt(tx_hash)
