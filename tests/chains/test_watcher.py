"""The deposit watcher on a real anvil node: payments arrive, once, confirmed, and move their order."""

import contextlib
import dataclasses
import time

import pytest
from web3 import Web3

from chains.devnet import NATIVE
from chains.models import ChainCursor, Deposit, OutboxTx, WatchedAddress
from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from orders.models import Order
from tests.devnets import devnet_order

pytestmark = pytest.mark.django_db(transaction=True)


def _scan_until(chain, done, timeout=8.0):
    """Scan as beat would (every poll) until `done()` holds; the last scan's result."""
    deadline = time.monotonic() + timeout
    result = None
    while time.monotonic() < deadline:
        result = scan_chain(chain.chain_id)
        if done():
            return result
        time.sleep(0.3)
    raise AssertionError(f"not done after {timeout} s; last scan {result}")


def _pay(chain, order, amount, token=None, account=1):
    return devnet_transfer(
        chain=chain,
        token=token or order.src_token_address,
        to=order.global_address,
        amount=amount,
        from_account=account,
    )


def test_a_half_payment_keeps_scanning_and_the_second_half_moves_the_order(api_client, devnet_registry):
    chain, deployment = devnet_registry
    order = devnet_order(api_client, deployment, amount="10000000")
    first = _pay(chain, order, 5_000_000)

    _scan_until(chain, lambda: Deposit.objects.filter(tx_hash=first).exists())

    order.refresh_from_db()
    assert order.status == Order.Status.SCANNING_DEPOSIT
    second = _pay(chain, order, 5_000_000, account=2)
    _scan_until(chain, lambda: Order.objects.get(pk=order.pk).status != Order.Status.SCANNING_DEPOSIT)

    order.refresh_from_db()
    assert order.status == Order.Status.QUOTING_AFTER_DEPOSIT and order.received_deposit_at is not None
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    data = api_client.get(f"/orders/{order.id}").json()["data"]
    assert [(d["txHash"], d["amount"], d["from"]) for d in data["depositTxs"]] == [
        (first, "5000000", w3.eth.accounts[1]),
        (second, "5000000", w3.eth.accounts[2]),
    ]
    assert data["order"]["receivedDepositAt"] is not None


def test_native_coin_is_seen_the_same_way(api_client, devnet_registry):
    chain, deployment = devnet_registry
    order = devnet_order(api_client, deployment, symbol="ETH", amount=str(10**17))
    tx_hash = _pay(chain, order, 10**17)

    _scan_until(chain, lambda: Order.objects.get(pk=order.pk).status == Order.Status.QUOTING_AFTER_DEPOSIT)

    deposit = Deposit.objects.get(tx_hash=tx_hash)
    assert (deposit.log_index, deposit.token, deposit.amount) == (-1, NATIVE, str(10**17))
    assert (
        deposit.block_hash
        == Web3(Web3.HTTPProvider(chain.rpc_url)).eth.get_block(deposit.block_number)["hash"].to_0x_hex()
    )


def test_another_token_is_recorded_and_flagged_not_counted(api_client, devnet_registry):
    chain, deployment = devnet_registry
    order = devnet_order(api_client, deployment, amount="10000000")
    tx_hash = _pay(chain, order, 10**18, token=deployment["contracts"]["dWETH"])

    _scan_until(chain, lambda: order.deposit_txs.filter(tx_hash=tx_hash).exists())

    deposit = order.deposit_txs.get(tx_hash=tx_hash)
    assert (deposit.counted, deposit.refund_reason, int(deposit.refund_amount)) == (
        False,
        "wrong_token",
        10**18,
    )
    assert Order.objects.get(pk=order.pk).status == Order.Status.SCANNING_DEPOSIT


def test_a_payment_after_expiry_is_marked_for_refund(api_client, devnet_registry):
    chain, deployment = devnet_registry
    order = devnet_order(api_client, deployment, amount="10000000")
    Order.objects.filter(pk=order.pk).update(status=Order.Status.EXPIRED)
    tx_hash = _pay(chain, order, 10_000_000)

    _scan_until(chain, lambda: order.deposit_txs.filter(tx_hash=tx_hash).exists())

    deposit = order.deposit_txs.get(tx_hash=tx_hash)
    assert (deposit.counted, deposit.refund_reason) == (False, "late")
    assert Order.objects.get(pk=order.pk).status == Order.Status.EXPIRED


def test_each_deposit_is_recorded_once_however_often_the_range_is_read(api_client, devnet_registry):
    chain, deployment = devnet_registry
    order = devnet_order(api_client, deployment, amount="10000000")
    tx_hash = _pay(chain, order, 1_000_000)
    _scan_until(chain, lambda: Deposit.objects.filter(tx_hash=tx_hash).exists())

    ChainCursor.objects.filter(pk=chain.chain_id).update(scanned_to=-1)  # read everything again
    scan_chain(chain.chain_id)

    assert Deposit.objects.filter(tx_hash=tx_hash).count() == 1
    assert order.deposit_txs.filter(tx_hash=tx_hash).count() == 1


def test_a_deposit_is_handed_over_once_its_scan_committed_read_the_receipts_and_freed_the_chain(
    api_client, devnet_registry, monkeypatch
):
    """Recording and handing over are two steps: the scan's deposits and its cursor commit together, the
    receipts of the service's transactions in the confirmed blocks are read, and the chain is free for its next
    scan; then each deposit goes to its owner in a transaction of its own (in a burst, seconds of work that
    held all of these back)."""
    from chains import handlers
    from chains.devnet import devnet_signer_environment
    from chains.outbox import outbox_send, outbox_submit

    chain, deployment = devnet_registry
    for variable, key in devnet_signer_environment().items():
        monkeypatch.setenv(variable, key)  # this process signs, as the chain worker does
    order = devnet_order(api_client, deployment, amount="10000000")
    scan_chain(chain.chain_id)  # the cursor at the confirmed head
    seen = []

    def observer(deposit):
        cursor = ChainCursor.objects.get(pk=chain.chain_id)
        seen.append(
            (
                deposit.tx_hash,
                cursor.scanned_to >= deposit.block_number,
                cursor.leased_until is None,
                OutboxTx.objects.get(pk=sent.pk).status,
            )
        )

    monkeypatch.setattr(handlers, "_deposit_observers", [*handlers._deposit_observers, observer])
    with _block_per_transaction(chain) as w3:
        sent = outbox_submit(
            key="test:hand-over:own", chain_id=chain.chain_id, signer="vault", to="0x" + "77" * 20, value=1
        )
        outbox_send(sent.pk)
        tx_hash = _pay(chain, order, 10_000_000)
        for _ in range(chain.confirmations):
            w3.provider.make_request("evm_mine", [])

        scan_chain(chain.chain_id)

    assert seen == [(tx_hash, True, True, OutboxTx.Status.MINED)]
    order.refresh_from_db()
    assert order.status == Order.Status.QUOTING_AFTER_DEPOSIT


@contextlib.contextmanager
def _block_per_transaction(chain):
    """Anvil mines a block for each transaction and no other (automine): the test says when blocks come."""
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [True])
    try:
        yield w3
    finally:
        w3.provider.make_request("evm_setIntervalMining", [1])


def test_a_deposit_reorganised_away_before_confirmation_is_never_recorded(
    api_client, devnet_registry, settings
):
    chain, deployment = devnet_registry
    settings.CHAINS = [dataclasses.asdict(chain) | {"confirmations": 2}]
    order = devnet_order(api_client, deployment, amount="10000000")
    with _block_per_transaction(chain) as w3:
        scan_chain(chain.chain_id)  # the cursor is at the confirmed head
        snapshot = w3.provider.make_request("evm_snapshot", [])["result"]
        tx_hash = _pay(chain, order, 10_000_000)  # mined at once (automine), in block N: not yet confirmed
        assert scan_chain(chain.chain_id) is not None
        assert not Deposit.objects.filter(tx_hash=tx_hash).exists()
        w3.provider.make_request("evm_revert", [snapshot])  # block N and the transfer are gone
        for _ in range(4):
            w3.provider.make_request("evm_mine", [])
        scan_chain(chain.chain_id)
        assert ChainCursor.objects.get(pk=chain.chain_id).scanned_to >= w3.eth.block_number - 2
        assert not Deposit.objects.filter(tx_hash=tx_hash).exists()
        assert Order.objects.get(pk=order.pk).status == Order.Status.SCANNING_DEPOSIT


def test_a_deposit_counts_once_its_block_has_the_chains_confirmations_its_own_block_counted(
    api_client, devnet_registry, settings
):
    """Two confirmations: the block that holds the payment and one on top of it, as a wallet counts them (and
    as the outbox and the readers count a receipt): not one block more."""
    chain, deployment = devnet_registry
    settings.CHAINS = [dataclasses.asdict(chain) | {"confirmations": 2}]
    order = devnet_order(api_client, deployment, amount="10000000")
    with _block_per_transaction(chain) as w3:
        scan_chain(chain.chain_id)
        tx_hash = _pay(chain, order, 10_000_000)  # mined at once, in block N: one confirmation
        paid_in = w3.eth.get_transaction_receipt(tx_hash)["blockNumber"]
        assert w3.eth.block_number == paid_in
        scan_chain(chain.chain_id)
        assert not Deposit.objects.filter(tx_hash=tx_hash).exists()
        assert ChainCursor.objects.get(pk=chain.chain_id).scanned_to == paid_in - 1

        w3.provider.make_request("evm_mine", [])  # block N + 1: two confirmations
        scan_chain(chain.chain_id)

        assert Deposit.objects.filter(tx_hash=tx_hash, block_number=paid_in).count() == 1
        assert ChainCursor.objects.get(pk=chain.chain_id).scanned_to == paid_in


def test_a_thousand_watched_addresses_cost_a_handful_of_requests_per_scan(api_client, devnet_registry):
    chain, _ = devnet_registry
    from django.utils import timezone

    until = timezone.now() + timezone.timedelta(hours=1)
    WatchedAddress.objects.bulk_create(
        [
            WatchedAddress(
                chain_id=chain.chain_id,
                address=Web3.to_checksum_address(f"0x{n:040x}"),
                owner=f"test:{n}",
                watch_until=until,
            )
            for n in range(1, 1001)
        ]
    )
    ChainCursor.objects.update_or_create(
        chain_id=chain.chain_id,
        defaults={"scanned_to": Web3(Web3.HTTPProvider(chain.rpc_url)).eth.block_number - 30},
    )
    result = scan_chain(chain.chain_id)

    assert result is not None and result.scanned_to - result.scanned_from >= 20
    # head, two eth_getLogs of 500 addresses, one batch of blocks (+ one of receipts if any matched), and the
    # native balances of the new addresses at the range's end and at the block before it, 2 batches each
    # (tests/chains/test_native_by_balance.py: 2 a scan once they are known)
    assert result.rpc_requests <= 9


def test_one_scan_per_chain_at_a_time(api_client, devnet_registry):
    chain, _ = devnet_registry
    from django.utils import timezone

    ChainCursor.objects.update_or_create(
        chain_id=chain.chain_id, defaults={"leased_until": timezone.now() + timezone.timedelta(minutes=1)}
    )
    assert scan_chain(chain.chain_id) is None
    ChainCursor.objects.filter(pk=chain.chain_id).update(leased_until=None)
    assert scan_chain(chain.chain_id) is not None


def test_a_quick_payment_is_paid_by_real_transfers(api_client, devnet_registry):
    from quickpay.models import QuickPayment

    chain, deployment = devnet_registry
    body = {
        "amount": "3000000",
        "token_address": deployment["contracts"]["dUSDC"],
        "chain_id": 31337,
        "recipient_address": "0x" + "11" * 20,
    }
    created = api_client.post("/api/v1/quick-pay", body, format="json")
    assert created.status_code == 201, created.content
    payment_id, address = created.json()["id"], created.json()["deposit_address"]
    pay = dict(chain=chain, token=body["token_address"], to=address, from_account=3)

    devnet_transfer(amount=1_000_000, **pay)
    _scan_until(chain, lambda: QuickPayment.objects.get(pk=payment_id).amount_received == "1000000")
    assert QuickPayment.objects.get(pk=payment_id).status == "awaiting_payment"
    second = devnet_transfer(amount=2_000_000, **pay)
    _scan_until(chain, lambda: QuickPayment.objects.get(pk=payment_id).status == "paid")

    shown = api_client.get(f"/api/v1/quick-pay/{payment_id}").json()
    assert (shown["status"], shown["amount_received"], shown["tx_hash"]) == ("paid", "3000000", second)


def test_a_restarted_devnet_leaves_its_previous_lifes_deposits_alone(api_client, devnet_registry, settings):
    """The node starts again from block 0 on a database that outlives it: the old deposits' blocks are
    numbered alike on the new chain but are not there. They must not be orphaned, then withdrawn (their
    owners told, the ledger reversing them in the new life's books)."""
    from django.utils import timezone

    from chains.devnet import forget_devnet_transactions

    chain, _ = devnet_registry
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    orphan = Deposit.objects.create(  # orphaned by a reorg of the old life, its grace not run out there
        chain_id=chain.chain_id,
        tx_hash="0x" + "ac" * 32,
        log_index=0,
        block_number=2,
        block_hash="0x" + "ce" * 32,
        from_address="0x" + "01" * 20,
        to_address="0x" + "02" * 20,
        token="0x" + "03" * 20,
        amount="2000",
        owner="order:previous-life",
        status=Deposit.Status.ORPHANED,
        orphaned_at_block=2,
        handled_at=timezone.now(),
    )
    old = Deposit.objects.create(
        chain_id=chain.chain_id,
        tx_hash="0x" + "ab" * 32,
        log_index=0,
        block_number=1,
        block_hash="0x" + "cd" * 32,  # the previous life's block 1
        from_address="0x" + "01" * 20,
        to_address="0x" + "02" * 20,
        token="0x" + "03" * 20,
        amount="1000",
        owner="order:previous-life",
        status=Deposit.Status.CONFIRMED,
        handled_at=timezone.now(),
    )
    forget_devnet_transactions([chain.chain_id])
    ChainCursor.objects.update_or_create(
        chain_id=chain.chain_id,
        defaults={"scanned_to": w3.eth.block_number + 100, "scanned_hash": "0x" + "ee" * 32},
    )  # the cursor of the old life, beyond the new head: the watcher reads the chain again from block 0
    for _ in range(settings.REORG_GRACE_BLOCKS + 3):
        w3.provider.make_request("evm_mine", [])
    scan_chain(chain.chain_id)
    scan_chain(chain.chain_id)
    old.refresh_from_db()
    orphan.refresh_from_db()
    assert old.status == Deposit.Status.CONFIRMED and old.orphaned_at_block is None
    assert orphan.status == Deposit.Status.ORPHANED  # never withdrawn by the new life's block numbers
