"""The relay provider: the vault's deposits and the contract calls of every type, against a stand-in written from the provider's documentation
(tests/orders/relay_standin.py): an ERC-20 deposit is `approve(depository, amount)` then `depositErc20`, and the
fill comes on the other devnet. Orders paid together must not take each other's allowance (issue 43)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import time

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from chains.artifacts import artifact
from chains.models import Incident, OutboxTx
from chains.outbox import outbox_check_receipts
from ledger.models import Posting
from ledger.reconcile import reconcile_chain
from orders.models import Order
from orders.relays import vault_allowance
from orders.settlement import relay_refunds_post
from orders.types import CALLS_CONTRACT
from tests.chains.test_outbox import until_finished
from tests.conftest import wait_for
from tests.orders.devnet_checkout import (
    PAYER,
    checkout,
    drive,
    erc20,
    nothing_in_flight,
    pay,
    random_address,
    receipt_on,
    run_until,
    service_round,
    w3_of,
)
from tests.orders.relay_standin import SOLVER_ACCOUNT
from tools.relay_standin import NATIVE

pytestmark = pytest.mark.django_db

ORDERS = 20


def holders(standin, a, b) -> dict:
    """Whose balance a relayed payment moves, and in which token: read before and after, compared to the unit."""
    return {
        "payer": (erc20(a), w3_of(a).eth.accounts[PAYER]),
        "vault": (erc20(a), settings.VAULT_ADDRESS),
        "depository": (erc20(a), standin.depository.address),
        "provider's solver": (erc20(b), w3_of(b).eth.accounts[SOLVER_ACCOUNT]),
        "service's solver": (erc20(b), settings.SOLVER_ADDRESS),
        "multicaller": (erc20(b), standin.multicaller.address),
    }


def balances(who: dict) -> dict:
    return {name: contract.functions.balanceOf(address).call() for name, (contract, address) in who.items()}


def relayed(order: Order) -> dict:
    """What a swap relayed by the provider moves of each of `holders`: the payer's price to the vault, less the
    fee to the depository, and its worth from the provider's solver to the recipient."""
    fee = int(order.src_amount) * order.fee["finalFeeBps"] // 10_000
    return {
        "payer": -int(order.src_amount),
        "vault": fee,
        "depository": int(order.src_amount) - fee,
        "provider's solver": -(int(order.src_amount) - fee),
        "service's solver": 0,
        "multicaller": 0,
    }


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
    who = holders(standin, a, b)
    before = balances(who)
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
    # Every deposit reached the depository, each of its own amount; every recipient got its fill on Devnet B; the
    # vault kept the fees and nothing else; the service's own solver fronted nothing. To the unit.
    paid = sent = 0
    for order in Order.objects.filter(pk__in=ids):
        fee = int(order.src_amount) * order.fee["finalFeeBps"] // 10_000
        paid += int(order.src_amount)
        sent += int(order.src_amount) - fee
        fill = order.relay_txs.get()
        assert (fill.chain, fill.status) == (31338, "success")
        assert erc20(b).functions.balanceOf(order.recipient_address).call() == int(order.src_amount) - fee
    after = balances(who)
    assert {name: after[name] - before[name] for name in who} == {
        "payer": -paid,
        "vault": paid - sent,
        "depository": sent,
        "provider's solver": -sent,
        "service's solver": 0,
        "multicaller": 0,
    }
    assert {quote["refundTo"] for quote in standin.quotes} == {settings.VAULT_ADDRESS}


def test_a_fill_that_fails_is_refunded_on_the_origin_chain_and_the_payer_gets_it_back(
    standin, devnets_registry, admin_client
):
    """...and the provider's refund into the vault is in the ledger once its chain shows it, so the vault
    reconciles to the unit (nothing else sees it: it is not the outbox's, nor to a watched address)."""
    a, b = devnets_registry
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    call_command("reconcile", "--open-devnets")
    standin.fail_fills = True
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",), timeout=120)
    for _ in range(3):  # the refund's block made deep enough
        w3_of(a).provider.make_request("evm_mine", [])
        service_round()

    assert order.error_details.startswith("RELAY_FAILED: the relay ended refund")
    refund = order.relay_txs.get()
    assert (refund.chain, refund.status) == (31337, "refund")  # the provider's refund, where it happened
    assert erc20(a).functions.balanceOf(payer).call() == before  # to the unit
    assert relay_refunds_post() == 1
    assert relay_refunds_post() == 0  # once
    deposited = int(standin.requests[order.settlement["relay"]["requestId"]].amount)
    posting = Posting.objects.get(key=f"relay-refund:31337:{refund.tx_hash.lower()}")
    legs = {(e.account.kind, e.side): e.amount for e in posting.entries.select_related("account")}
    assert legs == {("vault", "debit"): deposited, ("recipient", "credit"): deposited}
    assert posting.entries.get(side="credit").account.ref == standin.depository.address.lower()
    assert reconcile_chain(31337).ok


CONTRACT_TYPES = sorted(CALLS_CONTRACT)  # every type that calls a contract (orders.types)


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
    target = Order.objects.get(pk=order_id).payload.get("contractAddress") or b[1]["contracts"]["Tournament"]
    who = holders(standin, a, b) | {"contract": (erc20(b), target)}
    before = balances(who)
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
    # The payer paid the order; the vault paid the provider the price and kept the rest; the provider's solver
    # brought the price to the multicaller, which left all of it with the contract. To the unit.
    after, paid = balances(who), int(order.src_amount)
    assert {name: after[name] - before[name] for name in who} == {
        "payer": -paid,
        "vault": paid - price,
        "depository": price,
        "provider's solver": -price,
        "service's solver": 0,
        "multicaller": 0,
        "contract": price,
    }


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


# --- the provider's webhooks ----------------------------------------------------------------------------

WEBHOOK_KEY = "relay-webhook-key"


def signed(body: dict, *, key: str = WEBHOOK_KEY, at: float | None = None) -> dict:
    """The request as the provider sends it: `X-Signature-SHA256` over `${timestamp}.${body}`, keyed by the API
    key (https://docs.relay.link/references/api/api_guides/webhooks)."""
    raw = json.dumps(body).encode()
    timestamp = str(int((time.time() if at is None else at) * 1000))
    signature = hmac.new(key.encode(), timestamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
    return {
        "data": raw,
        "content_type": "application/json",
        "HTTP_X_SIGNATURE_TIMESTAMP": timestamp,
        "HTTP_X_SIGNATURE_SHA256": signature,
    }


def status_event(request_id: str, status: str = "success") -> dict:
    return {
        "event": "request.status.updated",
        "timestamp": int(time.time() * 1000),
        "data": {"status": status, "requestId": request_id, "inTxHashes": [], "txHashes": []},
    }


def _waiting_for_the_fill(standin, admin_client, devnets_registry) -> Order:
    """An order whose deposit reached the depository and whose fill the stand-in has sent (and will report)."""
    a, b = devnets_registry
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)
    run_until(lambda: bool(standin.fills()), order_id, what="the stand-in's fill")
    w3_of(b).eth.wait_for_transaction_receipt(standin.fills()[-1])
    return Order.objects.get(pk=order_id)


def _until_the_service_stops_asking(standin, request_id, order_id, *, quiet=2.0, timeout=60):
    """The deposit step confirmed, the provider's `pending` seen, and no status asked for `quiet` seconds: the
    worker has done everything its own transactions ask of it, so only a new word from the provider drives the
    order after this (the fill must not race a drive still in flight)."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        outbox_check_receipts()  # beat's receipts pass: the deposit step is finished once it is mined
        found = standin.requests[request_id]
        settled = found.status == "pending" and nothing_in_flight(Order.objects.get(pk=order_id))
        if found.asked != last or not settled:
            last, since = found.asked, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.2)
    pytest.fail(f"the service kept asking about {request_id} (status {standin.requests[request_id].status})")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_signed_status_event_drives_the_order_at_once_in_a_worker(
    standin, devnets_registry, worker_env, start_worker, admin_client, client, settings, httpserver
):
    settings.RELAY_API_KEY = WEBHOOK_KEY
    start_worker(
        **worker_env,
        RELAY_PROVIDER="relay",
        RELAY_API_URL=httpserver.url_for(""),
        RELAY_API_KEY=WEBHOOK_KEY,
        RELAY_DEPOSITORIES=f"31337:{standin.depository.address}",
    )
    a, b = devnets_registry
    standin.held = True  # the provider sees the deposit and says `pending`, even once it has filled
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)
    run_until(lambda: bool(standin.deposited()), order_id, what="the deposit at the depository")
    request_id = standin.deposited()[-1]
    _until_the_service_stops_asking(standin, request_id, order_id)
    w3_of(b).eth.wait_for_transaction_receipt(standin.fill(request_id))  # the provider fills, on its own time
    time.sleep(2)
    order = Order.objects.get(pk=order_id)
    # No beat here: a settlement the worker still had queued may ask once more, and hears `pending`.
    assert order.status == "relay"
    standin.held = False  # the provider tells of its fill: by this event first (nothing else asks again)

    response = client.post("/relay/webhook", **signed(status_event(request_id)))

    assert response.status_code == 200, response.content
    assert response.json()["data"] == {"result": "order driven"}
    wait_for(lambda: Order.objects.get(pk=order_id).status == "executed", timeout=60)
    assert order.settlement["relay"]["requestId"] == request_id


@pytest.mark.parametrize(
    ("tamper", "status"),
    [
        ({"key": "not-the-key"}, 401),
        ({"at": time.time() - 3600}, 400),
    ],
)
def test_a_delivery_badly_signed_or_old_is_refused_and_changes_nothing(
    standin,
    devnets_registry,
    admin_client,
    client,
    settings,
    django_capture_on_commit_callbacks,
    tamper,
    status,
):
    settings.RELAY_API_KEY = WEBHOOK_KEY
    order = _waiting_for_the_fill(standin, admin_client, devnets_registry)
    body = status_event(order.settlement["relay"]["requestId"])

    with django_capture_on_commit_callbacks() as queued:
        response = client.post("/relay/webhook", **signed(body, **tamper))

    assert response.status_code == status
    assert response.json()["success"] is False
    assert queued == []  # nothing was asked of a worker
    assert Order.objects.get(pk=order.pk).status == order.status


def test_an_event_about_a_request_no_order_waits_for_is_refused(client, settings, db):
    settings.RELAY_API_KEY = WEBHOOK_KEY
    response = client.post("/relay/webhook", **signed(status_event("0x" + "ab" * 32)))
    assert response.status_code == 400
    assert "no order waits for relay request" in response.json()["message"]


def test_a_call_that_cannot_be_encoded_fails_before_any_money_moves_and_is_refunded(
    standin, devnets_registry, admin_client
):
    a, b = devnets_registry
    order_id, _ = checkout(admin_client, a[1], b[1], "custom_exact_in", functionArgs=[])  # fund takes one
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",), timeout=120)

    assert "cannot be encoded" in order.error_details
    assert not [q for q in standin.quotes if q.get("txs")]  # the provider was never asked
    assert not OutboxTx.objects.filter(key__startswith=f"order:{order_id}:relay").exists()
    assert erc20(a).functions.balanceOf(payer).call() == before


def test_without_an_api_key_every_delivery_is_refused(client, settings, db):
    settings.RELAY_API_KEY = ""
    response = client.post("/relay/webhook", **signed(status_event("0x" + "ab" * 32), key=""))
    assert response.status_code == 401
    assert "RELAY_API_KEY is not set" in response.json()["message"]


def test_a_call_the_provider_refuses_to_quote_fails_before_any_money_moves_and_is_refunded(
    standin, devnets_registry, admin_client
):
    a, b = devnets_registry
    standin.refuse_calls = "execution reverted in simulation"
    order_id, _ = checkout(admin_client, a[1], b[1], "mint_nft")
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",), timeout=120)

    assert order.error_details == (
        "RELAY_FAILED: the relay provider refused the trade: execution reverted in simulation"
    )
    assert not OutboxTx.objects.filter(
        key__startswith=f"order:{order_id}:relay"
    ).exists()  # nothing deposited
    assert erc20(a).functions.balanceOf(payer).call() == before


def test_a_quote_that_asks_to_approve_another_spender_fails_before_any_money_moves(
    standin, devnets_registry, admin_client
):
    """The vault's standing allowance goes only to the depository the operator pinned: a quote (a compromised
    provider, an intercepted answer) naming another spender is refused, and the payer refunded to the unit."""
    a, b = devnets_registry
    standin.approve_spender = random_address()
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",), timeout=120)

    assert "which is not the relay provider's depository on chain 31337" in order.error_details
    assert (
        not OutboxTx.objects.filter(key__startswith="relay:allowance:", to=erc20(a).address)
        .filter(data__icontains=standin.approve_spender[2:].lower())
        .exists()
    )
    assert not OutboxTx.objects.filter(key__startswith=f"order:{order_id}:relay").exists()
    assert erc20(a).functions.balanceOf(payer).call() == before


# --- the stand-in itself: the provider's statuses and its signed webhooks -----------------------------------


def _deposit_steps(standin, w3, user: str, quote: dict) -> None:
    """The user sends the quote's steps, as the vault does through the outbox."""
    for step in quote["steps"]:
        data = step["items"][0]["data"]
        tx = w3.eth.send_transaction(
            {"from": user, "to": data["to"], "data": data["data"], "value": int(data["value"])}
        )
        assert w3.eth.wait_for_transaction_receipt(tx).status == 1


def _quote_body(a, b, user: str, amount: int, *, refund_to: str | None, token=None) -> dict:
    body = {
        "user": user,
        "recipient": random_address(),
        "originChainId": 31337,
        "destinationChainId": 31338,
        "originCurrency": token or erc20(a).address,
        "destinationCurrency": token or erc20(b).address,
        "amount": str(amount),
        "tradeType": "EXACT_INPUT",
    }
    return body | ({"refundTo": refund_to} if refund_to else {})


def test_the_standin_walks_a_request_through_the_providers_statuses(standin, devnets_registry):
    """waiting -> depositing -> pending -> delayed -> submitted -> success, each as the status endpoint and a
    signed webhook show it, the fill on the other chain from the provider's solver (issue 43, item 2)."""
    a, b = devnets_registry
    origin, destination = w3_of(a), w3_of(b)
    user = origin.eth.accounts[PAYER]
    standin.confirmations, standin.held, standin.delayed_after = 1, True, 0.3
    status, quote = standin.quote(_quote_body(a, b, user, 3_000_000, refund_to=user))
    assert status == 200
    request_id = quote["steps"][-1]["requestId"]
    seen = [standin.status(request_id)["status"]]
    _deposit_steps(standin, origin, user, quote)
    seen.append(standin.status(request_id)["status"])  # in the latest block: not yet one confirmation deep
    origin.provider.make_request("evm_mine", [])
    seen.append(standin.status(request_id)["status"])
    time.sleep(0.4)
    seen.append(standin.status(request_id)["status"])
    standin.held = False
    destination.provider.make_request(
        "evm_setIntervalMining", [0]
    )  # no block, by the interval or a transaction
    destination.provider.make_request("evm_setAutomine", [False])
    try:
        seen.append(standin.status(request_id)["status"])  # the fill is sent, not mined
        destination.provider.make_request("evm_mine", [])
    finally:
        destination.provider.make_request("evm_setAutomine", [True])
        destination.provider.make_request("evm_setIntervalMining", [1])
    final = standin.status(request_id)

    assert [*seen, final["status"]] == ["waiting", "depositing", "pending", "delayed", "submitted", "success"]
    fill = receipt_on(b, final["txHashes"][0])
    assert fill.status == 1 and fill.to == erc20(b).address  # on the destination chain
    assert receipt_on(a, final["inTxHashes"][0]).to == standin.depository.address


@pytest.mark.parametrize(("refund_to", "ends"), [(True, "refund"), (False, "failure")])
def test_a_fill_that_reverts_is_refunded_to_refund_to_and_without_it_is_a_failure(
    standin, devnets_registry, refund_to, ends
):
    """The provider refunds on the origin chain to `refundTo`; without it its automatic refunds are off."""
    a, b = devnets_registry
    origin, user = w3_of(a), w3_of(a).eth.accounts[PAYER]
    refunded_to = random_address()
    standin.fail_fills = True
    _, quote = standin.quote(_quote_body(a, b, user, 2_000_000, refund_to=refunded_to if refund_to else None))
    _deposit_steps(standin, origin, user, quote)
    shown = _final(standin, quote["steps"][-1]["requestId"])

    assert shown["status"] == ends
    assert erc20(a).functions.balanceOf(refunded_to).call() == (2_000_000 if refund_to else 0)
    if refund_to:
        assert receipt_on(a, shown["txHashes"][0]).to == standin.depository.address  # the origin chain


def _final(standin, request_id: str) -> dict:
    """The request's status once the provider is done with it, and its last transaction mined."""
    shown = wait_for(
        lambda: (s := standin.status(request_id))["status"] in ("success", "refund", "failure") and s
    )
    for chain in (standin.origin, standin.destination):
        for tx in shown["txHashes"]:
            with contextlib.suppress(Exception):  # the hash is on the other chain
                chain.eth.wait_for_transaction_receipt(tx, timeout=2)
    return shown


def test_a_native_deposit_is_one_step_with_its_value_and_is_filled_in_the_native_coin(
    standin, devnets_registry
):
    a, b = devnets_registry
    origin, user = w3_of(a), w3_of(a).eth.accounts[PAYER]
    _, quote = standin.quote(_quote_body(a, b, user, 10**15, refund_to=user, token=NATIVE))
    assert [step["id"] for step in quote["steps"]] == ["deposit"]
    assert quote["steps"][0]["items"][0]["data"]["value"] == str(10**15)
    _deposit_steps(standin, origin, user, quote)
    shown = _final(standin, quote["steps"][0]["requestId"])
    recipient = standin.requests[quote["steps"][0]["requestId"]].body["recipient"]

    assert shown["status"] == "success"
    assert w3_of(b).eth.get_balance(recipient) == 10**15


def test_the_standins_own_signed_webhooks_drive_the_order(
    standin, devnets_registry, admin_client, client, settings
):
    """The deliveries the stand-in signs, as the provider does, pass the service's verification and drive the
    order waiting for them; the same delivery with one byte changed is refused."""
    settings.RELAY_API_KEY = standin.api_key = WEBHOOK_KEY
    hooks = standin.webhook_url = "http://127.0.0.1:9/relay/webhook"  # nothing listens: the test replays them
    assert hooks
    standin.held = True
    a, b = devnets_registry
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)
    run_until(lambda: bool(standin.deposited()), order_id, what="the deposit at the depository")
    standin.held = False

    def filled() -> (
        bool
    ):  # the provider fills on its own time and tells the service (submitted, then success,
        standin.advance_all()  # once its fill is mined: at once or at the next block, as the devnet mines)
        return any(e["data"]["status"] == "success" for _, e in standin.webhooks)

    wait_for(filled, timeout=30)

    statuses = [event["data"]["status"] for _, event in standin.webhooks]
    event = next(e for _, e in standin.webhooks if e["data"]["status"] == "success")
    raw = json.dumps(event, separators=(",", ":")).encode()
    timestamp = str(event["timestamp"])
    signature = hmac.new(WEBHOOK_KEY.encode(), timestamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
    headers = {"HTTP_X_SIGNATURE_TIMESTAMP": timestamp, "HTTP_X_SIGNATURE_SHA256": signature}
    tampered = client.post(
        "/relay/webhook", data=raw.replace(b"success", b"refund!"), content_type="application/json", **headers
    )
    accepted = client.post("/relay/webhook", data=raw, content_type="application/json", **headers)

    assert "success" in statuses and statuses[0] in ("pending", "submitted", "success")
    assert tampered.status_code == 401
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["data"] == {"result": "order driven"}


def test_a_fill_the_provider_reports_that_the_destination_does_not_show_is_not_counted(
    standin, devnets_registry, admin_client
):
    a, b = devnets_registry
    standin.claims_fills = True
    recipient = random_address()
    order_id, _ = checkout(admin_client, a[1], b[1], "swap", recipient=recipient)
    pay(order_id, a)
    run_until(lambda: bool(standin.fills()), order_id, what="the provider's claimed fill")
    for _ in range(5):
        service_round(order_id)

    order = Order.objects.get(pk=order_id)
    assert order.status == "relay" and order.filled_at is None  # waiting, not executed on the provider's word
    assert erc20(b).functions.balanceOf(recipient).call() == 0


def test_relay_allow_gives_the_depository_the_vaults_standing_allowance_before_any_order(
    standin, devnets_registry
):
    """An operator adding a chain gives the allowance at once, so the first order through the provider does
    not wait for an `approve`; asked twice it is one transaction, and an order later finds it."""
    a, _ = devnets_registry
    token = erc20(a)
    out = io.StringIO()

    call_command("relay", "allow", "31337", token.address, stdout=out)
    call_command("relay", "allow", "31337", token.address.lower(), stdout=io.StringIO())

    allowance = OutboxTx.objects.get(key__startswith="relay:allowance:")
    assert allowance.to.lower() == token.address.lower() and "(the signing worker sends it)" in out.getvalue()
    until_finished(allowance)
    assert token.functions.allowance(settings.VAULT_ADDRESS, standin.depository.address).call() > 10**30
    assert vault_allowance(
        chain_id=31337, token=token.address, spender=standin.depository.address
    ) == OutboxTx.objects.get(key__startswith="relay:allowance:")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["31338", "TOKEN"], "RELAY_DEPOSITORIES pins no depository on chain 31338"),
        (["999", "TOKEN"], "chain 999 is not in the registry"),
        (["31337", "0x" + "00" * 20], "is not an ERC-20 token's address"),
        (["31337", "TOKEN", "0x" + "ab" * 20], "is not a registered token on chain 31337"),
        (["31337", "not-an-address"], "is not an ERC-20 token's address"),
    ],
)
def test_relay_allow_refuses_what_it_cannot_allow_and_asks_for_nothing(
    standin, devnets_registry, arguments, message
):
    token = erc20(devnets_registry[0]).address
    with pytest.raises(CommandError, match=message):
        call_command("relay", "allow", *[token if a == "TOKEN" else a for a in arguments])
    assert not OutboxTx.objects.filter(key__startswith="relay:allowance:").exists()


@pytest.mark.parametrize("reorged", [False, True])
def test_the_vault_pays_the_provider_once_the_sweep_is_in_a_block_not_a_block_later(
    standin, devnets_registry, admin_client, monkeypatch, settings, reorged
):
    """Two confirmations on the origin: the sweep in a block, not yet confirmed, moves the order on and the
    vault pays the provider's deposit then (a later nonce of the vault's: no reorg can put it before the
    sweep), a block sooner; the sweep is still checked once confirmed, and every balance moves to the unit.
    Reorged: the sweep's block is replaced by an empty one after the deposit to the provider was sent; the
    deposit waits behind the sweep's nonce, the sweep is broadcast again, and both are mined, in order, once."""
    settings.OUTBOX_REBROADCAST_SECONDS = 1
    from chains import registry
    from chains.models import Chain as ChainRow
    from chains.outbox import outbox_send
    from chains.watcher import scan_chain
    from orders import settlement

    a, b = devnets_registry
    allowance = vault_allowance(chain_id=31337, token=erc20(a).address, spender=standin.depository.address)
    outbox_send(allowance.pk)
    until_finished(allowance)  # the vault's standing allowance for the depository, given before any order
    row = ChainRow.objects.get(pk=31337)
    row.confirmations = 2
    row.save()
    told = []
    monkeypatch.setattr(settlement, "enqueue_settlement", lambda order_id: told.append(str(order_id)))
    w3 = w3_of(a)
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    order = Order.objects.get(pk=order_id)
    who = holders(standin, a, b)
    before = balances(who)
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [False])
    try:
        erc20(a).functions.transfer(order.global_address, int(order.src_amount)).transact(
            {"from": w3.eth.accounts[PAYER]}
        )
        for _ in range(2):  # the payment, and its second confirmation
            w3.provider.make_request("evm_mine", [])
        scan_chain(31337)
        settlement.settle_order(order_id)
        sweep = OutboxTx.objects.get(key=f"order:{order_id}:sweep")
        outbox_send(sweep.pk)
        assert (
            Order.objects.get(pk=order_id).status == "sending_token_from_vault"
        )  # the sweep is not in a block

        w3.provider.make_request("evm_mine", [])  # the sweep's block: one confirmation of two
        told.clear()
        outbox_check_receipts()
        sweep.refresh_from_db()
        assert sweep.status == "broadcast" and told == [order_id]  # not confirmed; its order is told
        settlement.settle_order(order_id)

        order = Order.objects.get(pk=order_id)
        assert order.status == "relay"
        assert "is in a block" in order.status_changes.get(to_status="relay").reason
        deposit = OutboxTx.objects.get(key__startswith=f"order:{order_id}:relay:")
        outbox_send(deposit.pk)
        deposit.refresh_from_db()
        sweep.refresh_from_db()
        assert sweep.status == "broadcast" and deposit.nonce == sweep.nonce + 1
        if reorged:
            swept_in = w3.eth.get_transaction_receipt(sweep.tx_hash)["blockNumber"]
            w3.provider.make_request("anvil_reorg", [1, []])  # the sweep's block, replaced by an empty one
            with pytest.raises(Exception, match="not found"):
                w3.eth.get_transaction_receipt(sweep.tx_hash)
            assert w3.eth.block_number == swept_in
        else:
            for _ in range(2):
                w3.provider.make_request("evm_mine", [])
    finally:
        w3.provider.make_request("evm_setAutomine", [True])
        w3.provider.make_request("evm_setIntervalMining", [1])
    try:
        order = drive(order_id)
    finally:
        registry.registry_forget()
    sweep.refresh_from_db()
    deposit.refresh_from_db()
    assert (order.status, sweep.status, deposit.status) == ("executed", "mined", "mined")
    assert sweep.block_number < deposit.block_number or (
        sweep.block_number == deposit.block_number and sweep.nonce < deposit.nonce
    )
    assert len(sweep.hashes) == 1 and len(deposit.hashes) == 1  # the same signed bytes, each mined once
    assert not Incident.objects.filter(subject=f"order:{order_id}").exists()  # it covered what was counted
    after = balances(who)
    assert {name: after[name] - before[name] for name in who} == relayed(order)
    delivered = -relayed(order)["provider's solver"]
    assert erc20(b).functions.balanceOf(order.recipient_address).call() == delivered
