"""Settlements of one payer at once account for each other (issue 64, item 3): the probe sent ten settles at
once of ten authorizations from a payer holding one payment's worth; all ten were sent, one was mined and nine
reverted at the vault's gas. And a key whose settlements keep reverting is stopped."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import requests
from django.utils import timezone
from eth_account import Account
from web3 import Web3

from chains.artifacts import artifact
from chains.models import OutboxTx
from facilitator.models import Settlement
from tests.conftest import client_for
from tests.facilitator.test_facilitator import drive_outbox, payer_account, post, requirements, signed
from tests.factories import make_api_key

AMOUNT = 1000


@pytest.mark.django_db(transaction=True)
def test_ten_settles_at_once_from_a_payer_holding_one_payments_worth_send_one_transaction(
    devnets_registry, organization, live_server, settings
):
    settings.X402_SETTLE_WAIT_SECONDS = 0
    chain, deployment = devnets_registry[0]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    usdc = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"])
    payer = Account.create()
    w3.eth.wait_for_transaction_receipt(
        usdc.functions.transfer(payer.address, AMOUNT).transact({"from": w3.eth.accounts[1]})
    )
    _, raw = make_api_key(organization, permissions=["write"], name="burst")
    merchants = [Account.create().address for _ in range(10)]
    bodies = [signed(w3, usdc, requirements(usdc, merchant, amount=AMOUNT), payer) for merchant in merchants]
    vault_nonce = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)

    def settle(body):
        return requests.post(
            f"{live_server.url}/x402/settle",
            data=json.dumps(body),
            headers={"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
            timeout=60,
        ).json()

    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(settle, bodies))
    drive_outbox()

    reasons = sorted(answer.get("errorReason") or "" for answer in answers)
    assert reasons.count("insufficient_funds") == 9, answers
    assert Settlement.objects.count() == OutboxTx.objects.count() == 1
    assert OutboxTx.objects.get().status == "mined"
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == vault_nonce + 1  # nothing reverted
    assert sum(usdc.functions.balanceOf(merchant).call() for merchant in merchants) == AMOUNT


@pytest.mark.django_db
def test_a_key_whose_settlements_keep_reverting_is_stopped_and_another_key_is_not(
    devnets_registry, organization, settings
):
    settings.X402_SETTLE_WAIT_SECONDS = 0
    settings.X402_REVERTED_PER_KEY = 2
    chain, deployment = devnets_registry[0]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    usdc = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"])
    key, raw = make_api_key(organization, permissions=["write"], name="reverting")
    _, other = make_api_key(organization, permissions=["write"], name="careful")
    for n in range(2):  # two settlements of this key that reverted on chain, at the vault's gas
        Settlement.objects.create(
            organization=organization,
            api_key=key,
            x402_version=2,
            chain_id=31337,
            token=usdc.address,
            payer=Account.create().address,
            pay_to=Account.create().address,
            value=1,
            valid_after=0,
            valid_before=2**40,
            nonce="0x" + f"{n:064x}",
            signature="0x00",
            status=Settlement.Status.FAILED,
            tx_hash="0x" + "ab" * 32,
            finished_at=timezone.now() - timedelta(minutes=1),
        )
    payer = payer_account(5)

    stopped = post(
        client_for(raw), "/x402/settle", signed(w3, usdc, requirements(usdc, Account.create().address), payer)
    ).json()
    allowed = post(
        client_for(other),
        "/x402/settle",
        signed(w3, usdc, requirements(usdc, Account.create().address), payer),
    ).json()

    assert (stopped["success"], stopped["errorReason"]) == (False, "unexpected_settle_error")
    assert "reverted on chain" in stopped["errorMessage"]
    assert allowed["errorReason"] == "settlement_pending"  # recorded and sent
    settings.X402_REVERTED_WINDOW_SECONDS = 30  # the window passed
    again = post(
        client_for(raw), "/x402/settle", signed(w3, usdc, requirements(usdc, Account.create().address), payer)
    ).json()
    assert again["errorReason"] == "settlement_pending"
