"""Test mode's rule, test chains only, holds on the facilitator too (issue 64, item 6): the probe settled an
x402 payment on a live chain with a svc_test_ key, and a test-mode link's 402 offered live chains. Devnet B is
made a live chain here (its registry entry neither a devnet nor a test network)."""

from __future__ import annotations

import base64
import json

import pytest
from eth_account import Account

from chains.models import OutboxTx
from checkout.models import PaymentLink
from facilitator.models import Settlement
from platform_api.testmode import organization_sandbox
from tests.conftest import client_for
from tests.facilitator.test_facilitator import payer_account, post
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def live_b(devnets_registry, settings):
    settings.X402_SETTLE_WAIT_SECONDS = 0
    settings.CHAINS = [
        entry | ({"devnet": False, "testnet": False} if entry["chain_id"] == 31338 else {})
        for entry in settings.CHAINS
    ]
    return devnets_registry


def _usdc_of(devnet):
    from web3 import Web3

    from chains.artifacts import artifact

    chain, deployment = devnet
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    return w3, w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"])


def _on_b(usdc, pay_to):
    return {
        "scheme": "exact",
        "network": "eip155:31338",
        "amount": "1000",
        "asset": usdc.address,
        "payTo": pay_to,
        "maxTimeoutSeconds": 60,
        "extra": {"name": "Devnet USD Coin", "version": "2"},
    }


def test_a_test_mode_key_neither_verifies_nor_settles_on_a_live_chain_and_a_live_key_does(
    live_b, organization
):
    _, b = live_b
    _, usdc = _usdc_of(b)
    test_key = make_api_key(organization_sandbox(organization), permissions=["write"])[1]
    live_key = make_api_key(organization, permissions=["write"])[1]
    assert test_key.startswith("svc_test_")
    payer = payer_account(4)

    def body():
        from tests.facilitator.signing import authorize

        required = _on_b(usdc, Account.create().address)
        payload = authorize(payer, to=required["payTo"], value=1000, token=usdc.address, chain_id=31338)
        return {
            "x402Version": 2,
            "paymentPayload": {"x402Version": 2, "accepted": required, "payload": payload},
            "paymentRequirements": required,
        }

    verified = post(client_for(test_key), "/x402/verify", body()).json()
    settled = post(client_for(test_key), "/x402/settle", body()).json()

    assert (verified["isValid"], verified["invalidReason"]) == (False, "invalid_network")
    assert "live chain" in verified["invalidMessage"]
    assert (settled["success"], settled["errorReason"]) == (False, "invalid_network")
    assert not Settlement.objects.exists() and not OutboxTx.objects.exists()
    assert post(client_for(live_key), "/x402/verify", body()).json()["isValid"] is True


def test_a_test_mode_links_402_offers_test_chains_only(live_b, organization, client):
    (_, a), _ = live_b
    sandbox = organization_sandbox(organization)
    link = PaymentLink.objects.create(
        organization=sandbox,
        name="A report",
        token_address=a["contracts"]["dUSDC"],
        chain_id=31337,
        recipient_address=Account.create().address,
        amount=1_000_000,
    )
    live_link = PaymentLink.objects.create(
        organization=organization,
        name="A report",
        token_address=a["contracts"]["dUSDC"],
        chain_id=31337,
        recipient_address=Account.create().address,
        amount=1_000_000,
    )

    def networks(of):
        offered = client.get(f"/x402/pay/{of.short_code}")
        return [
            entry["network"]
            for entry in json.loads(base64.b64decode(offered.headers["PAYMENT-REQUIRED"]))["accepts"]
        ]

    assert networks(link) == ["eip155:31337"]
    assert networks(live_link) == ["eip155:31337", "eip155:31338"]
