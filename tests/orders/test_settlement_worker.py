"""Settlement in a real Celery worker on real anvil devnets."""

import pytest
from web3 import Web3

from chains.models import OutboxTx
from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from orders.models import Order
from tests.conftest import wait_for
from tests.devnets import poll_until
from tests.orders.devnet_checkout import checkout

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_worker_settles_a_paid_order(devnets_registry, worker_env, start_worker, admin_client):
    a, b = devnets_registry
    queue = start_worker(**worker_env).queue
    order_id, _body = checkout(admin_client, a[1], b[1], "join_tournament")
    order = Order.objects.get(pk=order_id)
    devnet_transfer(
        chain=a[0],
        token=order.src_token_address,
        to=order.global_address,
        amount=int(order.src_amount),
        from_account=1,
    )

    wait_for(
        lambda: scan_chain(31337) and Order.objects.get(pk=order_id).status != "scanning_deposit_transaction"
    )
    poll_until(queue, lambda: Order.objects.get(pk=order_id).status == "executed")

    order.refresh_from_db()
    w3 = Web3(Web3.HTTPProvider(b[0].rpc_url))
    assert w3.eth.get_transaction_receipt(order.execute_tx["txHash"]).status == 1
    assert set(OutboxTx.objects.values_list("key", "status")) == {
        (f"order:{order_id}:sweep", "mined"),
        (f"order:{order_id}:relay", "mined"),
        (f"order:{order_id}:execute", "mined"),
    }


def test_a_worker_refunds_an_order_whose_call_reverts(
    devnets_registry, worker_env, start_worker, admin_client
):
    from chains.artifacts import artifact

    a, b = devnets_registry
    queue = start_worker(**worker_env).queue
    reverts = b[1]["contracts"]["AlwaysReverts"]
    order_id, _body = checkout(admin_client, a[1], b[1], "custom", to=reverts, spenderAddress=reverts)
    order = Order.objects.get(pk=order_id)
    w3 = Web3(Web3.HTTPProvider(a[0].rpc_url))
    usdc = w3.eth.contract(address=a[1]["contracts"]["dUSDC"], abi=artifact("TestToken")["abi"])
    before = usdc.functions.balanceOf(w3.eth.accounts[3]).call()
    devnet_transfer(
        chain=a[0],
        token=order.src_token_address,
        to=order.global_address,
        amount=int(order.src_amount),
        from_account=3,
    )

    wait_for(
        lambda: scan_chain(31337) and Order.objects.get(pk=order_id).status != "scanning_deposit_transaction"
    )
    poll_until(queue, lambda: Order.objects.get(pk=order_id).status == "refunded")

    refund = order.refund_txs.get()
    assert w3.eth.get_transaction_receipt(refund.tx_hash).status == 1
    assert usdc.functions.balanceOf(w3.eth.accounts[3]).call() == before
