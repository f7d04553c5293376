"""A refund settled by real Celery workers on a devnet, one of them killed mid-transaction (after signing, after
broadcasting): the payer receives the refund once, to the unit, and the vault sends each transaction once."""

import time

import pytest
from django.conf import settings
from web3 import Web3

from chains.artifacts import artifact
from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from refunds.models import Refund
from tests.conftest import wait_for
from tests.devnets import poll_until
from tests.factories import TransactionFactory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("crash_at", ["after_sign", "after_broadcast"])
def test_a_killed_worker_delivers_a_refund_once(
    devnets_registry, worker_env, start_worker, admin_client, organization, crash_at
):
    chain, deployment = devnets_registry[0]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    usdc = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("TestToken")["abi"])
    payer = w3.eth.accounts[1]
    paid = TransactionFactory(
        organization=organization,
        status="completed",
        chain_id=31337,
        token_address=usdc.address,
        source_chain_id=31337,
        source_token_address=usdc.address,
        amount=10_000_000,
        from_address=payer,
    )
    body = admin_client.post(
        "/api/v1/refunds", {"transaction": paid.id, "amount": "3000000"}, format="json"
    ).json()
    before = usdc.functions.balanceOf(payer).call()
    vault_nonce = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    devnet_transfer(
        chain=chain, token=usdc.address, to=body["funding"]["address"], amount=3_000_000, from_account=2
    )

    doomed = start_worker(**worker_env, OUTBOX_CRASH_AT=crash_at)
    deadline = time.monotonic() + 30
    while Refund.objects.get(pk=body["id"]).status != "pending" and time.monotonic() < deadline:
        scan_chain(31337)  # the funding counted: the refund's settlement goes to the doomed worker
        time.sleep(0.3)
    wait_for(lambda: doomed.process.poll() is not None, timeout=60)  # it died at `crash_at`

    survivor = start_worker(**worker_env, OUTBOX_RESEND_AFTER_SECONDS="0")
    poll_until(survivor.queue, lambda: Refund.objects.get(pk=body["id"]).status == "succeeded", timeout=90)

    assert usdc.functions.balanceOf(payer).call() == before + 3_000_000  # delivered once, to the unit
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == vault_nonce + 2  # the sweep, the delivery
    assert [h["kind"] for h in admin_client.get(f"/api/v1/refunds/{body['id']}").json()["tx_hashes"]] == [
        "funding",
        "delivery",
    ]
