"""Reorgs, dropped transactions and fake tokens on two real anvil devnets, as an attacker would cause them
(`anvil_reorg`, `evm_snapshot`/`evm_revert`, raw transactions, a contract that emits Transfer events), with
the balances of the payer, the vault, the solver and the recipient checked to the unit after each."""

from __future__ import annotations

import pytest
from django.conf import settings
from eth_account import Account
from web3 import Web3

from chains.artifacts import encode_call
from chains.devnet import deploy_contract, devnet_private_key
from chains.models import Deposit, Incident, OutboxTx
from orders.models import DepositTx, Order
from tests.orders.devnet_checkout import PAYER, checkout, drive, erc20, events, run_until, w3_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def devnets(devnets_registry, settings):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0  # no worker here: the poll signs what was asked for
    settings.OUTBOX_REBROADCAST_SECONDS = 2
    settings.REORG_GRACE_BLOCKS = 5
    return devnets_registry


def balances(a, b, recipient: str) -> dict[str, int]:
    return {
        "payer": erc20(a).functions.balanceOf(w3_of(a).eth.accounts[PAYER]).call(),
        "vault": erc20(a).functions.balanceOf(settings.VAULT_ADDRESS).call(),
        "solver": erc20(b).functions.balanceOf(settings.SOLVER_ADDRESS).call(),
        "recipient": erc20(b).functions.balanceOf(Web3.to_checksum_address(recipient)).call(),
    }


def raw_payment(a, order: Order, *, tip_gwei: int = 1) -> bytes:
    """The payer's transfer to the order's deposit address, signed but not sent: it can be sent again."""
    w3 = w3_of(a)
    payer = Account.from_key(devnet_private_key(PAYER))
    signed = payer.sign_transaction(
        {
            "type": 2,
            "chainId": a[0].chain_id,
            "nonce": w3.eth.get_transaction_count(payer.address),
            "to": order.src_token_address,
            "value": 0,
            "gas": 100_000,
            "data": encode_call("TestToken", "transfer", order.global_address, int(order.src_amount)),
            "maxFeePerGas": 50 * 10**9,
            "maxPriorityFeePerGas": tip_gwei * 10**9,
        }
    )
    return signed.raw_transaction


def mine_one_block(w3: Web3, send) -> None:
    """Whatever `send()` sends, mined together in one block (automine and interval mining paused)."""
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [False])
    try:
        send()
        w3.provider.make_request("evm_mine", [])
    finally:
        w3.provider.make_request("evm_setAutomine", [True])
        w3.provider.make_request("evm_setIntervalMining", [1])


def test_a_payment_moved_to_another_block_by_a_reorg_is_one_deposit_never_refunded(devnets, admin_client):
    """The attacker's reorg: an executed swap's payment and its sweep are reorganised away, another transfer
    goes first, then the same raw payment lands at another log index in a later block. One deposit, no
    refund; the outbox sends its stored sweep again; every balance moved exactly once."""
    a, b = devnets
    w3 = w3_of(a)
    order_id, body = checkout(admin_client, a[1], b[1], "swap")
    order = Order.objects.get(pk=order_id)
    before = balances(a, b, body["recipientAddress"])
    payment = raw_payment(a, order)
    paid_hash = w3.eth.send_raw_transaction(payment).to_0x_hex()
    paid_block = w3.eth.wait_for_transaction_receipt(paid_hash).blockNumber
    order = drive(order_id)
    assert order.status == "executed"
    delivered = int(order.settlement["dstAmount"])
    sweep = OutboxTx.objects.get(key=f"order:{order_id}:sweep")
    first = Deposit.objects.get(tx_hash=paid_hash)

    # Take the payment and the sweep off Devnet A, then another transfer with a higher tip first and the same
    # signed payment after it, in one later block.
    w3.provider.make_request("anvil_reorg", [w3.eth.block_number - paid_block + 1, []])
    with pytest.raises(Exception, match="not found"):
        w3.eth.get_transaction_receipt(paid_hash)
    other = (
        erc20(a)
        .functions.transfer(w3.eth.accounts[3], 1)
        .build_transaction(
            {"from": w3.eth.accounts[2], "maxPriorityFeePerGas": 5 * 10**9, "maxFeePerGas": 60 * 10**9}
        )
    )
    mine_one_block(w3, lambda: (w3.eth.send_transaction(other), w3.eth.send_raw_transaction(payment)))
    again = w3.eth.get_transaction_receipt(paid_hash)
    assert again.blockNumber != first.block_number and again.logs[0].logIndex == 1

    run_until(
        lambda: (
            Deposit.objects.get(pk=first.pk).block_hash == again.blockHash.to_0x_hex()
            and OutboxTx.objects.get(pk=sweep.pk).status == "mined"
            and OutboxTx.objects.get(pk=sweep.pk).block_hash != sweep.block_hash
        ),
        order_id,
        what="the deposit moved and the sweep mined again",
    )

    deposit = Deposit.objects.get(tx_hash=paid_hash)
    assert (
        Deposit.objects.filter(tx_hash=paid_hash).count() == 1
        and DepositTx.objects.filter(order=order).count() == 1
    )
    assert (deposit.pk, deposit.status, deposit.log_index) == (first.pk, "confirmed", 1)
    order.refresh_from_db()
    assert order.status == "executed" and not order.refund_txs.exists()
    assert not OutboxTx.objects.filter(key__contains=":refund").exists()
    assert events(order_id, "payment.failed") == [] and len(events(order_id, "payment.completed")) == 1
    after = balances(a, b, body["recipientAddress"])
    amount = int(order.src_amount)
    assert after == {
        "payer": before["payer"] - amount,
        "vault": before["vault"] + amount,
        "solver": before["solver"] - delivered,
        "recipient": before["recipient"] + delivered,
    }
    # The sweep that left the chain was sent again as the same signed transaction, and staff were told.
    sweep.refresh_from_db()
    assert sweep.nonce is not None and sweep.tx_hash in sweep.hashes and len(sweep.hashes) == 1
    assert Incident.objects.filter(kind="tx_reorged", subject=f"outbox:{sweep.key}").exists()
    assert not Incident.objects.filter(kind__in=("deposit_reorged", "sweep_short")).exists()


def test_a_reverted_chain_flags_the_executed_order_and_later_orders_still_settle(devnets, admin_client):
    """evm_snapshot, an executed order, evm_revert: the payment and the sweep no longer exist. The order is
    flagged for staff (its deposit withdrawn, its sweep moved nothing), the vault's freed nonce is taken by
    the sweep sent again, and the next order on the chain settles in seconds, not never."""
    a, b = devnets
    w3 = w3_of(a)
    vault_nonce = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    snapshot = w3.provider.make_request("evm_snapshot", [])["result"]
    first_id, first_body = checkout(admin_client, a[1], b[1], "swap")
    before = balances(a, b, first_body["recipientAddress"])
    w3.eth.send_raw_transaction(raw_payment(a, Order.objects.get(pk=first_id)))
    first = drive(first_id)
    delivered_first = int(first.settlement["dstAmount"])
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == vault_nonce + 1  # the sweep

    assert w3.provider.make_request("evm_revert", [snapshot])["result"] is True
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == vault_nonce
    second_id, second_body = checkout(admin_client, a[1], b[1], "swap")
    second_before = balances(a, b, second_body["recipientAddress"])
    w3.eth.send_raw_transaction(raw_payment(a, Order.objects.get(pk=second_id)))

    second = drive(second_id, timeout=90)
    w3.provider.make_request("anvil_mine", [settings.REORG_GRACE_BLOCKS + 2])
    run_until(
        lambda: Incident.objects.filter(subject=f"order:{first_id}").count() == 2,
        first_id,
        second_id,
        what="the first order flagged twice",
    )

    assert second.status == "executed"
    delivered_second = int(second.settlement["dstAmount"])
    first.refresh_from_db()
    assert first.status == "executed"  # delivered on Devnet B before the revert: the service's loss
    flags = dict(Incident.objects.filter(subject=f"order:{first_id}").values_list("kind", "summary"))
    assert set(flags) == {"deposit_reorged", "sweep_short"}
    assert "moved 0 of the 10000000" in flags["sweep_short"]
    deposit = first.deposit_txs.get()
    assert deposit.withdrawn_at is not None and not deposit.counted
    assert deposit.deposit.status == "withdrawn"
    # The payer paid the second order only; the vault holds the second payment only; Devnet B was not reverted.
    after = balances(a, b, second_body["recipientAddress"])
    amount = int(second.src_amount)
    assert after["payer"] == before["payer"] - amount == second_before["payer"] - amount
    assert after["vault"] == before["vault"] + amount
    assert after["solver"] == before["solver"] - delivered_first - delivered_second
    assert after["recipient"] == second_before["recipient"] + delivered_second
    assert (
        balances(a, b, first_body["recipientAddress"])["recipient"] == before["recipient"] + delivered_first
    )
    # Both sweeps are on the chain, at the vault's two nonces, and no fee bump ran away.
    sweeps = OutboxTx.objects.filter(key__in=[f"order:{first_id}:sweep", f"order:{second_id}:sweep"])
    assert sorted(tx.nonce for tx in sweeps) == [vault_nonce, vault_nonce + 1]
    assert all(tx.status == "mined" and len(tx.hashes) == 1 for tx in sweeps)
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == vault_nonce + 2
    # Nothing more is sent for the flagged order while staff have not resolved it.
    assert OutboxTx.objects.filter(key__startswith=f"order:{first_id}").count() == 2  # sweep and relay


def test_fake_transfer_events_cost_the_vault_nothing(devnets, admin_client):
    """A contract emits 50 ERC-20 Transfer events (and zero-value ones) to a deposit address in one
    transaction: recorded for staff once, never swept or refunded; the real payment settles alone."""
    a, b = devnets
    w3 = w3_of(a)
    order_id, body = checkout(admin_client, a[1], b[1], "swap")
    order = Order.objects.get(pk=order_id)
    before = balances(a, b, body["recipientAddress"])
    vault_nonce = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    vault_eth = w3.eth.get_balance(settings.VAULT_ADDRESS)
    spammer = w3.eth.accounts[5]
    fake = deploy_contract(w3, "FakeTransfers", sender=spammer)
    receipt = w3.eth.wait_for_transaction_receipt(
        fake.functions.spam(order.global_address, 10**6, 50).transact({"from": spammer})
    )
    assert len(receipt.logs) == 50
    w3.eth.wait_for_transaction_receipt(
        fake.functions.spam(order.global_address, 0, 5).transact({"from": spammer})
    )
    w3.eth.send_raw_transaction(raw_payment(a, order))

    order = drive(order_id)
    run_until(
        lambda: Deposit.objects.filter(token=fake.address).count() == 50, order_id, what="50 fake deposits"
    )

    assert order.status == "executed"
    fakes = Deposit.objects.filter(token=fake.address)
    assert set(fakes.values_list("status", flat=True)) == {"unlisted"}
    assert sorted(fakes.values_list("seq", flat=True)) == list(range(50))
    assert not DepositTx.objects.filter(token_address=fake.address).exists()
    assert order.deposit_txs.count() == 1 and not order.refund_txs.exists()
    incident = Incident.objects.get(kind="unlisted_token")
    assert incident.subject == f"unlisted:31337:{fake.address}:{order.global_address}"
    # One transaction from the vault on Devnet A: the real payment's sweep.
    assert list(OutboxTx.objects.filter(chain_id=31337).values_list("key", flat=True)) == [
        f"order:{order_id}:sweep"
    ]
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == vault_nonce + 1
    sweep_gas = OutboxTx.objects.get(chain_id=31337)
    spent = w3.eth.get_transaction_receipt(sweep_gas.tx_hash)
    assert w3.eth.get_balance(settings.VAULT_ADDRESS) == vault_eth - spent.gasUsed * spent.effectiveGasPrice
    delivered = int(order.settlement["dstAmount"])
    amount = int(order.src_amount)
    assert balances(a, b, body["recipientAddress"]) == {
        "payer": before["payer"] - amount,
        "vault": before["vault"] + amount,
        "solver": before["solver"] - delivered,
        "recipient": before["recipient"] + delivered,
    }
