"""Payment links payable over x402 (GET /x402/pay/{short_code}): the 402 and its offers, refusals, and payment
by the x402 Foundation's SDK client, same-chain and cross-chain (an `x402_swap` order), settled by a real
worker to the merchant on real devnets (issue 45, items 3 and 5)."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest
from eth_account import Account
from web3 import Web3

from chains.artifacts import artifact
from chains.devnet import devnet_private_key
from chains.families import deposit_address
from chains.models import OutboxTx
from checkout.models import CheckoutSession, PaymentLink, Transaction
from facilitator.models import Settlement
from orders.models import Order
from tests.conftest import wait_for
from tests.devnets import poll_until
from tests.facilitator.signing import authorize

PRICE = 2_500_000


def _link(organization, deployment, **fields) -> PaymentLink:
    return PaymentLink.objects.create(
        organization=organization,
        name="A weather report",
        token_address=deployment["contracts"]["dUSDC"],
        chain_id=31337,
        recipient_address=Account.create().address,
        **({"amount": PRICE} | fields),
    )


def _required(response) -> dict:
    return json.loads(base64.b64decode(response.headers["PAYMENT-REQUIRED"]))


@pytest.mark.django_db
def test_a_link_answers_402_with_one_offer_per_signature_token_its_own_first_and_writes_nothing(
    devnets_registry, organization, client
):
    (_, a), (_, b) = devnets_registry
    link = _link(organization, a)

    response = client.get(f"/x402/pay/{link.short_code}")

    assert response.status_code == 402
    v2, v1 = _required(response), response.json()
    assert v2["x402Version"] == 2 and v1["x402Version"] == 1
    networks = [(entry["network"], entry["asset"]) for entry in v2["accepts"]]
    assert networks == [("eip155:31337", a["contracts"]["dUSDC"]), ("eip155:31338", b["contracts"]["dUSDC"])]
    own, other = v2["accepts"]
    assert own["amount"] == str(PRICE)  # the merchant's own token: the price, its fee taken from it
    payment_id = own["extra"]["paymentId"]
    assert own["payTo"] == deposit_address(chain_id=31337, kind="order", identifier=payment_id, field="x")
    assert other["payTo"] == deposit_address(chain_id=31338, kind="order", identifier=payment_id, field="x")
    assert own["extra"]["name"] == "Devnet USD Coin" and own["extra"]["version"] == "2"
    assert [entry["maxAmountRequired"] for entry in v1["accepts"]] == [own["amount"], other["amount"]]
    swap = v2["extensions"]["crosschain-swap"]["info"]
    assert swap["destination"] == {
        "network": "eip155:31337",
        "asset": link.token_address,
        "amount": str(PRICE),
    }
    assert [origin["network"] for origin in swap["origins"]] == ["eip155:31338"]
    assert not Order.objects.exists() and not CheckoutSession.objects.exists()
    again = _required(client.get(f"/x402/pay/{link.short_code}"))
    assert again["accepts"][0]["extra"]["paymentId"] != payment_id  # each 402 offers another payment


@pytest.mark.django_db
def test_a_link_that_cannot_be_paid_over_x402_says_why(devnets_registry, organization, client):
    (_, a), _ = devnets_registry
    assert client.get("/x402/pay/nope").status_code == 404
    gone = _link(organization, a, is_active=False)
    assert client.get(f"/x402/pay/{gone.short_code}").status_code == 410
    form = _link(organization, a, collect_shipping_address=True)
    assert client.get(f"/x402/pay/{form.short_code}").status_code == 409
    open_amount = _link(organization, a, amount=None, min_amount=1_000_000, max_amount=5_000_000)
    assert client.get(f"/x402/pay/{open_amount.short_code}").status_code == 400
    assert client.get(f"/x402/pay/{open_amount.short_code}?amount=9000000").status_code == 400
    chosen = client.get(f"/x402/pay/{open_amount.short_code}?amount=2000000")
    assert (chosen.status_code, _required(chosen)["accepts"][0]["amount"]) == (402, "2000000")


@pytest.mark.django_db
def test_offers_are_limited_per_client_address(devnets_registry, organization, client, settings):
    (_, a), _ = devnets_registry
    settings.X402_PAY_RATE_LIMIT_PER_MINUTE = 2
    link = _link(organization, a)
    assert [client.get(f"/x402/pay/{link.short_code}").status_code for _ in range(3)] == [402, 402, 429]


def _signed_retry(offer: dict, payer, chain_id: int) -> str:
    payload = {
        "x402Version": 2,
        "accepted": offer,
        "payload": authorize(
            payer, to=offer["payTo"], value=offer["amount"], token=offer["asset"], chain_id=chain_id
        ),
    }
    return base64.b64encode(json.dumps(payload).encode()).decode()


@pytest.mark.django_db
@pytest.mark.parametrize("tamper", ["amount", "payTo", "asset", "expired", "garbage", "v1"])
def test_a_changed_or_stale_offer_or_a_malformed_header_is_refused_with_a_fresh_402_and_nothing_moves(
    devnets_registry, organization, client, tamper, settings
):
    (_, a), _ = devnets_registry
    settings.X402_SETTLE_WAIT_SECONDS = 0
    link = _link(organization, a)
    offer = _required(client.get(f"/x402/pay/{link.short_code}"))["accepts"][0]
    headers = {}
    if tamper == "amount":
        offer["amount"] = "1"
    elif tamper == "payTo":
        offer["payTo"] = Account.create().address
    elif tamper == "asset":
        offer["asset"] = a["contracts"]["dWETH"]
    elif tamper == "expired":
        settings.X402_OFFER_SECONDS = -1
        offer = _required(client.get(f"/x402/pay/{link.short_code}"))["accepts"][0]
    if tamper == "garbage":
        headers["HTTP_PAYMENT_SIGNATURE"] = "not base64!"
    elif tamper == "v1":
        headers["HTTP_X_PAYMENT"] = _signed_retry(offer, Account.from_key(devnet_private_key(1)), 31337)
    else:
        headers["HTTP_PAYMENT_SIGNATURE"] = _signed_retry(
            offer, Account.from_key(devnet_private_key(1)), 31337
        )

    response = client.get(f"/x402/pay/{link.short_code}", **headers)

    assert response.status_code == 402
    reason = _required(response)["error"]
    assert reason.split(":")[0] in {
        "invalid_payment_requirements",
        "invalid_exact_evm_payload_recipient_mismatch",
        "invalid_payload",
        "invalid_x402_version",
    }, reason
    assert not Order.objects.exists() and not Settlement.objects.exists()


@pytest.mark.django_db
def test_an_offer_whose_payer_submitted_the_authorization_first_is_still_the_merchants_order(
    devnets_registry, organization, client, settings
):
    """The payer (or anyone who saw the header) sent the authorization to the chain before retrying: the retry
    finds the transfer, makes the order all the same, and its deposit is counted as any other."""
    from chains.eip3009 import transfer_call_data
    from chains.models import Deposit
    from chains.watcher import scan_chain

    (chain, a), _ = devnets_registry
    settings.X402_SETTLE_WAIT_SECONDS = 0
    link = _link(organization, a)
    offer = _required(client.get(f"/x402/pay/{link.short_code}"))["accepts"][0]
    payer = Account.from_key(devnet_private_key(2))
    payload = authorize(payer, to=offer["payTo"], value=offer["amount"], token=offer["asset"], chain_id=31337)
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    own = transfer_call_data(payload["authorization"], bytes.fromhex(payload["signature"][2:]), vrs=True)
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": payer.address, "to": offer["asset"], "data": own})
    )
    header = base64.b64encode(json.dumps({"x402Version": 2, "accepted": offer, "payload": payload}).encode())

    paid = client.get(f"/x402/pay/{link.short_code}", HTTP_PAYMENT_SIGNATURE=header.decode())

    assert paid.status_code == 200, paid.json()
    order = Order.objects.get(pk=paid.json()["orderId"])
    settlement = Settlement.objects.get()
    assert (settlement.submitted_by_us, order.global_address) == (False, offer["payTo"])
    wait_for(
        lambda: (
            scan_chain(31337) is not None
            and Deposit.objects.filter(to_address=order.global_address, amount=offer["amount"]).exists()
        ),
        timeout=30,
    )


def _beat(queue, stop: threading.Event) -> None:
    """What beat does for the test: scan both devnets and poll the outbox, in the worker, twice a second."""
    from chains.tasks import scan_chain_deposits

    while not stop.is_set():
        for chain_id in (31337, 31338):
            scan_chain_deposits.apply_async(args=[chain_id], queue=queue)
        poll_until(queue, lambda: True, timeout=5)
        time.sleep(0.5)


def _sdk_session(payer, assets):
    from x402 import x402ClientSync
    from x402.http.clients.requests import x402_requests
    from x402.mechanisms.evm.exact import register_exact_evm_client

    client = register_exact_evm_client(x402ClientSync(), payer)
    client.set_spend_controls(
        {
            "allowed_assets": [
                {"network": network, "asset": asset, "max_amount_per_payment": "10000000"}
                for network, asset in assets
            ]
        }
    )
    return x402_requests(client)


class _V1Session:
    """A version 1 payer, as clients before version 2 pay: the SDK's version 1 `exact` client reads the 402's
    JSON body and answers with `X-PAYMENT`. The SDK's version 1 table names no devnet, so the devnets' names
    (`eip155:<id>`, as the service names a chain without a version 1 name) are added to it for the test."""

    def __init__(self, payer, network: str, chain_id: int, monkeypatch) -> None:
        from x402 import x402ClientSync
        from x402.mechanisms.evm.exact.v1.client import ExactEvmSchemeV1
        from x402.mechanisms.evm.v1.constants import V1_NETWORK_CHAIN_IDS

        monkeypatch.setitem(V1_NETWORK_CHAIN_IDS, network, chain_id)
        self.client = x402ClientSync().register_v1(network, ExactEvmSchemeV1(payer))
        self.client.set_spend_controls({"allowed_assets": True})  # the devnet's dUSDC is no default asset

    def get(self, url: str, timeout: float):
        import requests
        from x402.http import x402HTTPClientSync
        from x402.schemas.v1 import PaymentRequiredV1

        offered = requests.get(url, timeout=timeout)
        assert offered.status_code == 402, offered.text
        payload = self.client.create_payment_payload(PaymentRequiredV1.model_validate(offered.json()))
        headers = x402HTTPClientSync(self.client).encode_payment_signature_header(payload)
        assert list(headers) == ["X-PAYMENT"]
        return requests.get(url, headers=headers, timeout=timeout)


@pytest.mark.django_db
def test_a_version_1_payment_names_its_offer_by_its_address_and_one_no_offer_pays_is_refused(
    devnets_registry, organization, client, settings, monkeypatch
):
    (_, a), _ = devnets_registry
    settings.X402_SETTLE_WAIT_SECONDS = 0
    link = _link(organization, a)
    payer = Account.from_key(devnet_private_key(1))
    offer = client.get(f"/x402/pay/{link.short_code}").json()["accepts"][0]
    assert offer["network"] == "eip155:31337"  # a devnet has no version 1 name
    inner = authorize(
        payer, to=offer["payTo"], value=offer["maxAmountRequired"], token=offer["asset"], chain_id=31337
    )
    stranger = authorize(
        payer,
        to=Account.create().address,
        value=offer["maxAmountRequired"],
        token=offer["asset"],
        chain_id=31337,
    )

    def header(payload: dict) -> str:
        return base64.b64encode(json.dumps(payload).encode()).decode()

    v1 = {"x402Version": 1, "scheme": "exact", "network": "eip155:31337"}
    other = _link(organization, a)
    for payload, url in (
        (v1 | {"payload": stranger}, f"/x402/pay/{link.short_code}"),  # no offer pays that address
        (v1 | {"payload": inner}, f"/x402/pay/{other.short_code}"),  # another link's offer
        # the offer on Devnet B pays the same address, but the payer signed for Devnet A
        (v1 | {"network": "eip155:31338", "payload": inner}, f"/x402/pay/{link.short_code}"),
        (v1 | {"scheme": "upto", "payload": inner}, f"/x402/pay/{link.short_code}"),
        ({"x402Version": 2, "payload": inner}, f"/x402/pay/{link.short_code}"),
        (v1 | {"payload": {"authorization": "none"}}, f"/x402/pay/{link.short_code}"),
    ):
        refused = client.get(url, HTTP_X_PAYMENT=header(payload))
        assert refused.status_code == 402
        assert refused.json()["error"].split(":")[0] in {
            "invalid_payment_requirements",
            "invalid_scheme",
            "invalid_x402_version",
            "invalid_payload",
            "invalid_exact_evm_payload_signature",
        }, refused.json()["error"]
    assert not Order.objects.exists() and not Settlement.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("way", ["same chain", "cross-chain", "version 1"])
def test_the_sdks_client_pays_a_link_and_the_merchant_is_paid_as_from_the_hosted_page(
    devnets_registry, worker_env, start_worker, live_server, organization, way, settings, monkeypatch
):
    (chain_a, a), (chain_b, b) = devnets_registry
    link = _link(organization, a)
    source, chain_id = (b, 31338) if way == "cross-chain" else (a, 31337)
    w3 = Web3(Web3.HTTPProvider((chain_b if way == "cross-chain" else chain_a).rpc_url))
    usdc = w3.eth.contract(address=source["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"])
    merchant_w3 = Web3(Web3.HTTPProvider(chain_a.rpc_url))
    merchant_usdc = merchant_w3.eth.contract(
        address=a["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"]
    )
    payer = Account.from_key(devnet_private_key(7))
    tokens_before, native_before = (
        usdc.functions.balanceOf(payer.address).call(),
        w3.eth.get_balance(payer.address),
    )
    vault_before = usdc.functions.balanceOf(settings.VAULT_ADDRESS).call()
    solver_before = merchant_usdc.functions.balanceOf(settings.SOLVER_ADDRESS).call()
    # The client takes the first offer it may pay: the merchant's own token, or (cross-chain) the only one
    # it is allowed, on Devnet B.
    if way == "version 1":
        session = _V1Session(payer, "eip155:31337", 31337, monkeypatch)
    else:
        session = _sdk_session(payer, [(f"eip155:{chain_id}", source["contracts"]["dUSDC"])])
    queue = start_worker(**worker_env).queue
    stop = threading.Event()
    threading.Thread(target=_beat, args=(queue, stop), daemon=True).start()
    try:
        started = time.monotonic()
        paid = session.get(f"{live_server.url}/x402/pay/{link.short_code}", timeout=90)
        answered = time.monotonic() - started
        assert paid.status_code == 200, paid.text
        receipt = paid.json()
        order_id = receipt["orderId"]
        wait_for(
            lambda: Order.objects.get(pk=order_id).status in ("executed", "refunded", "failure"), timeout=90
        )
        delivered = time.monotonic() - started
        wait_for(  # the sweep into the vault, which the solver's delivery does not wait for
            lambda: (
                not OutboxTx.objects.filter(
                    key__startswith=f"order:{order_id}:", status__in=("queued", "signed", "broadcast")
                ).exists()
            ),
            timeout=60,
        )
    finally:
        stop.set()

    order = Order.objects.get(pk=order_id)
    assert order.status == "executed", order.error_details
    assert (order.type, order.src_chain, order.dst_chain) == ("x402_swap", chain_id, 31337)
    settlement = Settlement.objects.get()
    assert settlement.pay_to == order.global_address and settlement.organization_id == organization.pk
    assert receipt["transaction"] == settlement.tx_hash and receipt["network"] == f"eip155:{chain_id}"
    assert receipt["checkoutSessionId"] == order.session_order.session_id
    header = "X-PAYMENT-RESPONSE" if way == "version 1" else "PAYMENT-RESPONSE"
    response = json.loads(base64.b64decode(paid.headers[header]))
    assert response["success"] is True and response["transaction"] == settlement.tx_hash
    assert settlement.x402_version == (1 if way == "version 1" else 2)
    assert usdc.functions.balanceOf(payer.address).call() == tokens_before - int(receipt["amount"])
    # What the payer authorized reached the vault whole (swept from the order's address); the merchant was
    # paid from the solver's stock on the merchant's chain.
    assert usdc.functions.balanceOf(settings.VAULT_ADDRESS).call() == vault_before + int(receipt["amount"])
    assert usdc.functions.balanceOf(order.global_address).call() == 0
    assert w3.eth.get_balance(payer.address) == native_before  # the payer paid no gas
    delivered_amount = int(order.settlement["dstAmount"])
    assert merchant_usdc.functions.balanceOf(link.recipient_address).call() == delivered_amount
    assert (
        merchant_usdc.functions.balanceOf(settings.SOLVER_ADDRESS).call() == solver_before - delivered_amount
    )
    transaction = Transaction.objects.get(order_id=order.pk)
    assert (transaction.status, transaction.payment_link_id) == ("completed", link.pk)
    print(
        f"x402 link, {way}: signed request to 200 in {answered:.1f} s, to the merchant's delivery in {delivered:.1f} s"
    )
