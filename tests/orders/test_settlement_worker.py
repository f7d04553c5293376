"""Settlement in a real Celery worker on real anvil devnets."""

import pytest
from web3 import Web3

from chains.models import Deposit, OutboxTx
from chains.wallet import devnet_transfer
from chains.watcher import scan_chain
from ledger.models import Posting
from orders.models import DepositTx, Order, OrderStatusChange
from tests.conftest import locked_elsewhere, wait_for
from tests.devnets import poll_until
from tests.orders.devnet_checkout import checkout

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _pay_orders(admin_client, a, b, how_many: int, order_type: str = "swap") -> list[str]:
    """`how_many` orders of `order_type` from A to B, each paid by anvil's account 1; their ids."""
    ids = []
    for _ in range(how_many):
        order_id, _body = checkout(admin_client, a[1], b[1], order_type)
        order = Order.objects.get(pk=order_id)
        devnet_transfer(
            chain=a[0],
            token=order.src_token_address,
            to=order.global_address,
            amount=int(order.src_amount),
            from_account=1,
        )
        ids.append(order_id)
    return ids


def test_a_worker_settles_a_paid_order(devnets_registry, worker_env, start_worker, admin_client):
    a, b = devnets_registry
    queue = start_worker(**worker_env).queue
    (order_id,) = _pay_orders(admin_client, a, b, 1, "join_tournament")
    order = Order.objects.get(pk=order_id)

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


def test_a_burst_of_deposits_is_handed_over_by_the_scan_and_the_workers_each_once(
    devnets_registry, worker_env, start_worker, admin_client, settings
):
    a, b = devnets_registry
    settings.WATCHER_HAND_OVER_HERE = 2
    worker = start_worker(pool="prefork", concurrency=2, **worker_env)
    ids = _pay_orders(admin_client, a, b, 4)

    assert wait_for(lambda: scan_chain(31337)).deposits == 4
    poll_until(  # executed once delivered; each sweep, sent beside the delivery, is finished when mined
        worker.queue,
        lambda: (
            Order.objects.filter(pk__in=ids, status="executed").count() == 4
            and not OutboxTx.objects.exclude(status="mined").exists()
        ),
    )

    assert Deposit.objects.filter(handled_at__isnull=False).count() == 4
    for order_id in ids:  # each counted once, posted once, delivered once
        order = Order.objects.get(pk=order_id)
        assert order.deposit_txs.count() == 1
        assert Posting.objects.filter(order_id=order.pk, kind="deposit").count() == 1
        assert sorted(
            OutboxTx.objects.filter(key__startswith=f"order:{order_id}").values_list("key", "status")
        ) == [(f"order:{order_id}:relay", "mined"), (f"order:{order_id}:sweep", "mined")]


def test_a_burst_the_scan_handed_over_alone_is_settled_there_and_its_queued_tasks_change_nothing(
    devnets_registry, admin_client, settings
):
    from chains.tasks import hand_over_deposit

    a, b = devnets_registry
    settings.WATCHER_HAND_OVER_HERE = 1
    ids = _pay_orders(admin_client, a, b, 2)

    assert wait_for(lambda: scan_chain(31337)).deposits == 2  # no worker runs: the scan does it all

    # Each settled in the scan's process as far as it goes without a worker: swept and delivered by the devnet
    # solver, both waiting to be signed.
    assert set(Order.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"relay"}
    changes = OrderStatusChange.objects.count()
    for deposit in Deposit.objects.all():  # the tasks it queued, run late: nothing more happens
        hand_over_deposit(deposit.pk)
    assert OrderStatusChange.objects.count() == changes
    assert DepositTx.objects.count() == 2
    assert OutboxTx.objects.count() == 4


def test_a_deposit_handed_over_by_a_worker_is_settled_there_without_another_task(
    devnets_registry, admin_client, settings
):
    from chains.tasks import hand_over_deposit
    from config.celery import app

    a, b = devnets_registry
    (order_id,) = _pay_orders(admin_client, a, b, 1)
    settings.WATCHER_HAND_OVER_HERE = 1
    with pytest.MonkeyPatch.context() as patch:  # recorded, not handed over: as if its task were queued
        patch.setattr("chains.watcher.hand_over", lambda deposits: None)
        wait_for(lambda: scan_chain(31337))
    deposit = Deposit.objects.get()
    assert deposit.handled_at is None

    queued = []
    sent = app.send_task
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            app, "send_task", lambda name, *args, **kwargs: queued.append(name) or sent(name, *args, **kwargs)
        )
        hand_over_deposit(deposit.pk)  # as the worker that takes the task runs it

    deposit.refresh_from_db()
    assert deposit.handled_at is not None
    # Settled here, as far as it goes without a worker: swept and delivered by the devnet solver, both queued
    # to be signed; no settlement task was queued for it.
    assert Order.objects.get(pk=order_id).status == "relay"
    assert "orders.tasks.settle_order_task" not in queued
    assert set(OutboxTx.objects.values_list("key", flat=True)) == {
        f"order:{order_id}:sweep",
        f"order:{order_id}:relay",
    }


def test_a_burst_is_handed_over_by_the_scan_when_no_task_can_be_queued(
    devnets_registry, admin_client, settings, monkeypatch
):
    from kombu.exceptions import OperationalError

    from chains.tasks import hand_over_deposit

    a, b = devnets_registry
    settings.WATCHER_HAND_OVER_HERE = 1
    ids = _pay_orders(admin_client, a, b, 2)

    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(hand_over_deposit, "delay", broker_down)
    assert wait_for(lambda: scan_chain(31337)).deposits == 2

    assert Deposit.objects.filter(handled_at__isnull=False).count() == 2
    assert set(Order.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"relay"}


def test_a_deposit_another_process_is_handing_over_is_passed_by_not_waited_for(
    devnets_registry, admin_client, settings
):
    from chains.tasks import hand_over_deposit

    a, b = devnets_registry
    (order_id,) = _pay_orders(admin_client, a, b, 1)
    with pytest.MonkeyPatch.context() as patch:  # recorded, not handed over: as if its task were queued
        patch.setattr("chains.watcher.hand_over", lambda deposits: None)
        wait_for(lambda: scan_chain(31337))
    deposit = Deposit.objects.get()

    with locked_elsewhere(Deposit, deposit.pk):  # the scan, say, in the middle of handing it over
        hand_over_deposit(deposit.pk)  # passes it by at once (waiting, it would hand it over after 20 s)
        deposit.refresh_from_db()
        assert deposit.handled_at is None
        assert Order.objects.get(pk=order_id).status == "scanning_deposit_transaction"
    hand_over_deposit(deposit.pk)
    deposit.refresh_from_db()
    assert deposit.handled_at is not None


def test_a_bursts_hand_overs_are_queued_before_the_scan_reads_its_receipts(
    devnets_registry, admin_client, settings, monkeypatch
):
    """The settlement workers start on a burst while its scan finishes the transactions the new blocks
    confirmed (a pass of eight receipts held a burst's first hand-over back 0.85 s in a rehearsal)."""
    from chains import watcher
    from chains.tasks import hand_over_deposit

    a, b = devnets_registry
    settings.WATCHER_HAND_OVER_HERE = 1
    _pay_orders(admin_client, a, b, 2)
    events = []
    monkeypatch.setattr(hand_over_deposit, "delay", lambda deposit_id: events.append(("queued", deposit_id)))
    monkeypatch.setattr(watcher, "outbox_check_receipts", lambda **kwargs: events.append(("receipts", None)))

    assert wait_for(lambda: scan_chain(31337)).deposits == 2

    deposits = sorted(Deposit.objects.values_list("pk", flat=True))
    assert events == [("queued", deposits[0]), ("queued", deposits[1]), ("receipts", None)]
    assert Deposit.objects.filter(handled_at__isnull=False).count() == 2  # and the scan handed them over too
