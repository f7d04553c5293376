"""The vault pays the relay provider as soon as the order's sweep is out, where its balance covers the deposit
(orders/vault_ahead.py), on real anvil devnets against the provider's stand-in: the deposit takes the next
nonce after the sweep's, so no block holds it before the sweep; where the vault holds less than it owes the
provider, the order waits for its sweep's block, as before. Every balance moves to the unit, and the ledger
reconciles."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.management import call_command

from chains.models import Chain as ChainRow
from chains.models import OutboxTx
from chains.outbox import outbox_check_receipts, outbox_send
from chains.registry import registry_forget
from chains.watcher import scan_chain
from ledger.reconcile import reconcile_chain
from orders import settlement
from orders.models import Order
from orders.relays import vault_allowance
from tests.chains.test_outbox import until_finished
from tests.orders.devnet_checkout import PAYER, checkout, drive, erc20, w3_of
from tests.orders.test_relay_fast_fill import _balance_slot
from tests.orders.test_relay_standin import balances, holders, relayed

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("float_", ["covers", "short"])
def test_the_vault_pays_the_provider_once_the_sweep_is_out_where_its_balance_covers_it(
    standin, devnets_registry, admin_client, monkeypatch, float_
):
    a, b = devnets_registry
    allowance = vault_allowance(chain_id=31337, token=erc20(a).address, spender=standin.depository.address)
    outbox_send(allowance.pk)
    until_finished(allowance)
    row = ChainRow.objects.get(pk=31337)
    row.confirmations = 2
    row.save()
    told: list[str] = []
    monkeypatch.setattr(settlement, "enqueue_settlement", lambda order_id: told.append(str(order_id)))
    token, w3 = erc20(a), w3_of(a)
    w3.eth.wait_for_transaction_receipt(  # the vault's float on A, booked as its opening balance
        token.functions.transfer(settings.VAULT_ADDRESS, 50 * 10**6).transact(
            {"from": w3.eth.accounts[PAYER]}
        )
    )
    call_command("reconcile", "--open-devnets")
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    order = Order.objects.get(pk=order_id)
    who = holders(standin, a, b)
    before = balances(who)
    vault, slot = settings.VAULT_ADDRESS, _balance_slot(settings.VAULT_ADDRESS)
    held = token.functions.balanceOf(vault).call()
    assert held >= int(order.src_amount)
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [False])
    try:
        token.functions.transfer(order.global_address, int(order.src_amount)).transact(
            {"from": w3.eth.accounts[PAYER]}
        )
        for _ in range(2):  # the payment, and its second confirmation
            w3.provider.make_request("evm_mine", [])
        scan_chain(31337)
        settlement.settle_order(order_id)
        sweep = OutboxTx.objects.get(key=f"order:{order_id}:sweep")
        assert sweep.status == OutboxTx.Status.QUEUED
        settlement.settle_order(order_id)  # a sweep not yet signed: the vault does not pay ahead of it
        assert Order.objects.get(pk=order_id).status == "sending_token_from_vault"
        if float_ == "short":  # the vault holds less than the deposit (anvil's storage; put back below)
            w3.provider.make_request("anvil_setStorageAt", [token.address, slot, "0x" + "00" * 32])

        told.clear()
        outbox_send(sweep.pk)  # signed and broadcast: its order is told by the process that sent it
        sweep.refresh_from_db()
        assert sweep.status == OutboxTx.Status.BROADCAST and told == [order_id]
        settlement.settle_order(order_id)

        order = Order.objects.get(pk=order_id)
        if float_ == "short":
            assert order.status == "sending_token_from_vault"  # it waits for the sweep's block
            assert not OutboxTx.objects.filter(key__startswith=f"order:{order_id}:relay:").exists()
            w3.provider.make_request("anvil_setStorageAt", [token.address, slot, "0x" + f"{held:064x}"])
            w3.provider.make_request("evm_mine", [])  # the sweep's block
            outbox_check_receipts()
            settlement.settle_order(order_id)
            order = Order.objects.get(pk=order_id)
            assert "is in a block" in order.status_changes.get(to_status="relay").reason
        else:
            assert order.status == "relay"
            reason = order.status_changes.get(to_status="relay").reason
            assert f"is out at the vault's nonce {sweep.nonce}" in reason
        deposit = OutboxTx.objects.get(key__startswith=f"order:{order_id}:relay:")
        outbox_send(deposit.pk)
        deposit.refresh_from_db()
        sweep.refresh_from_db()
        assert deposit.nonce == sweep.nonce + 1  # no block can hold it before the sweep
        if float_ == "covers":
            assert sweep.status == OutboxTx.Status.BROADCAST  # both wait for the same next block
        for _ in range(2):
            w3.provider.make_request("evm_mine", [])
    finally:
        w3.provider.make_request("evm_setAutomine", [True])
        w3.provider.make_request("evm_setIntervalMining", [1])
    monkeypatch.undo()
    try:
        order = drive(order_id)
    finally:
        registry_forget()
    sweep.refresh_from_db()
    deposit.refresh_from_db()
    assert (order.status, sweep.status, deposit.status) == ("executed", "mined", "mined")
    if float_ == "covers":
        assert sweep.block_number == deposit.block_number  # paid in the sweep's block, not a block later
    after = balances(who)
    assert {name: after[name] - before[name] for name in who} == relayed(order)
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok


def test_what_the_vault_owes_the_provider_counts_every_order_paying_it_whose_deposit_is_not_mined(
    standin, devnets_registry, admin_client
):
    """Orders in the relay step on the chain and token, less those whose deposit is mined, at what each
    received; the order asking is not counted, nor orders of another token or chain."""
    from orders.vault_ahead import owed_to_provider
    from tests.factories import OrderFactory, OutboxTxFactory

    a, _ = devnets_registry
    token = erc20(a).address

    def paying(amount: int, **fields) -> Order:
        return OrderFactory(
            status="relay",
            src_chain=fields.pop("src_chain", 31337),
            src_token_address=fields.pop("src_token_address", token),
            settlement={"srcAmountReceived": str(amount)},
            **fields,
        )

    asking, _, in_flight, mined = (
        paying(1),
        paying(10),
        paying(100),
        paying(1000),
    )  # the 10: nothing queued yet
    paying(10_000, src_chain=31338)
    paying(100_000, src_token_address="0x" + "ab" * 20)
    OrderFactory(
        status="executed", src_chain=31337, src_token_address=token, settlement={"srcAmountReceived": "7"}
    )
    for order, status in ((in_flight, OutboxTx.Status.BROADCAST), (mined, OutboxTx.Status.MINED)):
        OutboxTxFactory(key=f"order:{order.pk}:relay:0", chain_id=31337, signer="vault", status=status)
    assert owed_to_provider(31337, token.lower(), but=asking) == 10 + 100
