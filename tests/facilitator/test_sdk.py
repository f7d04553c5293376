"""The x402 Foundation's own SDK (`x402` on PyPI, pinned) against our facilitator: a resource server built with
the SDK's Flask middleware uses /x402/ over HTTP as its facilitator, and the SDK's `requests` client pays it
with an eth_account signer on a real devnet. A real worker sends the settlement (issue 45, items 2 and 5)."""

from __future__ import annotations

import threading
import time

import pytest
from eth_account import Account
from web3 import Web3
from werkzeug.serving import make_server

from chains.artifacts import artifact
from chains.devnet import devnet_private_key
from chains.models import OutboxTx
from facilitator.models import Settlement
from tests.devnets import poll_until
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def resource_server(live_server, organization):
    """A Flask app selling GET /report for 0.25 dUSDC on Devnet A, paid to a fresh address, with the SDK's
    payment middleware and our facilitator (authenticated by a `write` key): (its URL, the payee)."""
    from flask import Flask, jsonify
    from x402 import x402ResourceServerSync
    from x402.http import FacilitatorConfig, HTTPFacilitatorClientSync
    from x402.http.facilitator_client_base import CreateHeadersAuthProvider
    from x402.http.middleware.flask import PaymentMiddleware
    from x402.http.types import PaymentOption, RouteConfig
    from x402.mechanisms.evm.exact import register_exact_evm_server

    from chains.models import Token

    _, raw_key = make_api_key(organization, permissions=["write"], name="resource server")
    headers = {"Authorization": f"Bearer {raw_key}"}
    facilitator = HTTPFacilitatorClientSync(
        FacilitatorConfig(
            url=f"{live_server.url}/x402",
            auth_provider=CreateHeadersAuthProvider(
                lambda: {"verify": headers, "settle": headers, "supported": {}}
            ),
        )
    )
    server = register_exact_evm_server(x402ResourceServerSync(facilitator), "eip155:31337")
    usdc = Token.objects.get(chain_id=31337, symbol="dUSDC")
    payee = Account.create().address
    app = Flask("resource")

    @app.get("/report")
    def report():
        return jsonify({"report": "the numbers"})

    PaymentMiddleware(
        app,
        {
            "GET /report": RouteConfig(
                accepts=PaymentOption(
                    scheme="exact",
                    pay_to=payee,
                    price={
                        "amount": "250000",
                        "asset": usdc.address,
                        "extra": {"name": usdc.eip712_name, "version": usdc.eip712_version},
                    },
                    network="eip155:31337",
                ),
                description="A report",
            )
        },
        server,
    )
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}", payee
    http.shutdown()


def test_the_sdks_client_pays_the_sdks_resource_server_through_our_facilitator(
    devnets_registry, worker_env, start_worker, resource_server
):
    from x402 import x402ClientSync
    from x402.http.clients.requests import x402_requests
    from x402.mechanisms.evm.exact import register_exact_evm_client

    url, payee = resource_server
    chain, deployment = devnets_registry[0]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    usdc = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"])
    payer = Account.from_key(devnet_private_key(6))
    tokens_before, native_before = (
        usdc.functions.balanceOf(payer.address).call(),
        w3.eth.get_balance(payer.address),
    )
    queue = start_worker(**worker_env).queue
    beat = threading.Event()

    def act_as_beat():  # the outbox poll reads receipts; beat asks for it every few seconds in production
        while not beat.is_set():
            poll_until(queue, lambda: True, timeout=5)
            time.sleep(0.5)

    threading.Thread(target=act_as_beat, daemon=True).start()
    client = register_exact_evm_client(x402ClientSync(), payer)
    # The SDK pays only the assets it knows (mainnets' USDC) unless told: the devnet's dUSDC, capped at 1 dUSDC.
    client.set_spend_controls(
        {
            "allowed_assets": [
                {"network": "eip155:31337", "asset": usdc.address, "max_amount_per_payment": "1000000"}
            ]
        }
    )
    session = x402_requests(client)
    try:
        unpaid = __import__("requests").get(f"{url}/report", timeout=30)
        started = time.monotonic()
        paid = session.get(f"{url}/report", timeout=90)
        elapsed = time.monotonic() - started
    finally:
        beat.set()

    assert unpaid.status_code == 402
    assert paid.status_code == 200, paid.text
    assert paid.json() == {"report": "the numbers"}
    assert "PAYMENT-RESPONSE" in paid.headers or "X-PAYMENT-RESPONSE" in paid.headers
    settlement = Settlement.objects.get()
    assert (settlement.payer, settlement.pay_to, int(settlement.value)) == (payer.address, payee, 250_000)
    tx = OutboxTx.objects.get(key=settlement.outbox_key)
    assert w3.eth.get_transaction_receipt(tx.tx_hash).status == 1
    assert usdc.functions.balanceOf(payee).call() == 250_000
    assert usdc.functions.balanceOf(payer.address).call() == tokens_before - 250_000
    assert w3.eth.get_balance(payer.address) == native_before  # no gas from the payer
    print(f"x402 through the SDK: signed request to 200 in {elapsed:.1f} s")
