"""Delivery on first sight (orders/fronting.py) on two real anvil devnets, the relay provider's stand-in
pricing: Devnet A counts a deposit at 3 confirmations and lets the solver deliver from its inventory on Devnet
B when the payment is in its block, within the exposure limits, the order executed as soon as the delivery is
in its block; a payment outside any limit waits for its confirmations; a payment reorged out after its
delivery, or an order that stopped waiting meanwhile, is the operator's loss, booked once (issue 66)."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from chains.incidents import incidents_resolve
from chains.models import ChainCursor, Incident, OutboxTx
from chains.outbox import outbox_check_receipts, outbox_poll
from chains.registry import chain_from_entry
from chains.watcher import scan_chain
from checkout.models import CheckoutSession, Transaction
from ledger.models import Account, Posting
from ledger.reconcile import reconcile_chain
from orders.fronting import exposure_settle
from orders.lifecycle import order_expire
from orders.models import ExposureLimit, Inventory, InventoryFront, Order
from tests.orders.devnet_checkout import PAYER, checkout, drive, erc20, pay, run_until, service_round, w3_of
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

BIG = 10**30
PRICE = 10_000_000  # what `checkout` asks the payer for: 10 dUSDC


@pytest.fixture
def early(standin, devnets_registry, settings):
    """Devnet A counts at 3 confirmations and fronts at 1; the solver's dUSDC on B is an inventory; dUSDC on A
    has an exposure limit that every test's payment fits unless the test lowers it."""
    a, b = devnets_registry
    chains = []
    for entry in settings.CHAINS:
        if entry["chain_id"] == 31337:
            entry = dict(entry, confirmations=3, front_confirmations=1)
        chains.append(entry)
    settings.CHAINS = chains
    assert dataclasses.asdict(chain_from_entry(chains[0]))["front_confirmations"] == 1
    settings.REORG_GRACE_BLOCKS = 3
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    Inventory.objects.create(
        chain_id=31338,
        token=erc20(b).address.lower(),
        refill_chain_id=31337,
        refill_token=erc20(a).address.lower(),
        low_mark=0,
        target=0,
        max_order=BIG,
        max_outstanding=BIG,
    )
    limit = ExposureLimit.objects.create(
        chain_id=31337,
        token=erc20(a).address.lower(),
        max_payment=PRICE,
        max_per_payer=3 * PRICE,
        max_outstanding=5 * PRICE,
    )
    call_command("reconcile", "--open-devnets")  # the devnets' opening balances, adopted
    return a, b, limit


def mine(devnet, blocks: int) -> None:
    for _ in range(blocks):
        w3_of(devnet).provider.make_request("evm_mine", [])


def test_a_payment_within_the_limits_is_delivered_in_its_block_and_counted_at_its_confirmations(
    early, admin_client, django_capture_on_commit_callbacks
):
    a, b, _ = early
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    recipient = Order.objects.get(pk=order_id).recipient_address
    paid = pay(order_id, a)

    scan_chain(31337)  # one scan of the payment's chain: the payment is in its block, not confirmed

    front = InventoryFront.objects.select_related("tx").get(order_id=order_id)
    assert (
        front.on_sight
        and front.payment_tx == paid.lower()
        and front.payer.lower() == (w3_of(a).eth.accounts[PAYER].lower())
    )
    # Signed and broadcast by the scan itself: no send task, no service round.
    assert front.tx.status in (OutboxTx.Status.BROADCAST, OutboxTx.Status.MINED)
    w3_of(b).eth.wait_for_transaction_receipt(front.tx.tx_hash, timeout=10)
    assert erc20(b).functions.balanceOf(recipient).call() == int(front.amount)
    assert Order.objects.get(pk=order_id).status == "scanning_deposit_transaction"

    with django_capture_on_commit_callbacks(execute=True):
        outbox_poll()  # the receipts pass sees the delivery in its block: the order is executed there, now

    order = Order.objects.get(pk=order_id)
    assert order.status == "executed", order.error_details
    assert not order.deposit_txs.exists()  # its payment is not counted before its confirmations
    assert order.settlement["onSight"]["txHash"] == paid.lower()
    assert order.settlement["srcAmountReceived"] == str(PRICE)
    assert int(order.settlement["dstAmount"]) == int(front.amount)
    assert [c.to_status for c in order.status_changes.order_by("pk")][-4:] == [
        "quoting_after_deposit",
        "sending_token_from_vault",
        "relay",
        "executed",
    ]

    mine(a, 2)  # the payment's confirmations: counted, covering the front, swept
    run_until(
        lambda: OutboxTx.objects.filter(key=f"order:{order_id}:sweep", status=OutboxTx.Status.MINED).exists(),
        order_id,
        what="the deposit counted and swept",
    )
    order = Order.objects.get(pk=order_id)
    assert order.status == "executed" and order.error_details is None
    deposit = order.deposit_txs.get()
    assert deposit.counted and deposit.refund_amount is None  # the payment seen, counted once
    assert InventoryFront.objects.filter(order_id=order_id).count() == 1
    assert InventoryFront.objects.get(order_id=order_id).covered_at is not None
    assert erc20(b).functions.balanceOf(recipient).call() == int(front.amount)  # delivered once
    assert not Posting.objects.filter(kind="front-loss").exists()
    mine(a, 3)  # the sweep's block confirmed too
    for _ in range(2):
        service_round(order_id)
    assert InventoryFront.objects.get(order_id=order_id).swept_at is not None
    run = reconcile_chain(31337)
    assert run.ok, [row for row in run.rows if row["difference"]]
    assert reconcile_chain(31338).ok


@pytest.mark.parametrize(
    "limit_change",
    [
        {"max_payment": PRICE - 1},
        {"max_per_payer": PRICE - 1},
        {"max_outstanding": PRICE - 1},
        {"enabled": False},
    ],
    ids=["payment", "payer", "outstanding", "disabled"],
)
def test_a_payment_outside_a_limit_waits_for_its_confirmations(early, admin_client, limit_change):
    a, b, limit = early
    ExposureLimit.objects.filter(pk=limit.pk).update(**limit_change)
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)

    scan_chain(31337)

    assert not InventoryFront.objects.filter(order_id=order_id).exists()
    assert ChainCursor.objects.get(pk=31337).sighted_to == w3_of(a).eth.block_number  # it was seen
    mine(a, 2)
    order = drive(order_id)
    assert order.status == "executed", order.error_details
    front = InventoryFront.objects.get(order_id=order_id)
    assert not front.on_sight  # delivered from inventory at the confirmations, as before


def test_the_payer_and_outstanding_limits_count_what_was_delivered_on_first_sight(early, admin_client):
    a, b, limit = early
    ExposureLimit.objects.filter(pk=limit.pk).update(max_per_payer=2 * PRICE)
    orders = [checkout(admin_client, a[1], b[1], "swap")[0] for _ in range(3)]
    for order_id in orders:
        pay(order_id, a)
        scan_chain(31337)
    fronted = [
        InventoryFront.objects.filter(order_id=o, payment_block__isnull=False).exists() for o in orders
    ]
    assert fronted == [True, True, False]  # the third would take the payer past 2 payments' worth


def test_a_burst_is_delivered_in_one_batch_by_the_scan_that_sees_it(early, admin_client, caplog):
    a, b, _ = early
    w3 = w3_of(a)
    orders = [checkout(admin_client, a[1], b[1], "swap")[0] for _ in range(3)]
    payers = w3.eth.accounts[1:4]
    w3.provider.make_request("evm_setAutomine", [False])
    try:
        token = erc20(a)
        for order_id, payer in zip(orders, payers, strict=True):
            order = Order.objects.get(pk=order_id)
            token.functions.transfer(order.global_address, int(order.src_amount)).transact({"from": payer})
        mine(a, 1)
    finally:
        w3.provider.make_request("evm_setAutomine", [True])
        w3.provider.make_request("evm_setIntervalMining", [1])  # the devnet's 1 s blocks again

    with caplog.at_level(logging.INFO, logger="chains.outbox.send"):
        scan_chain(31337)

    fronts = list(InventoryFront.objects.filter(order_id__in=orders).select_related("tx"))
    assert len(fronts) == 3 and len({f.payment_block for f in fronts}) == 1
    txs = sorted((f.tx for f in fronts), key=lambda tx: tx.nonce)
    assert all(tx.status != OutboxTx.Status.QUEUED for tx in txs)  # every one signed by the scan
    assert [tx.nonce for tx in txs] == list(range(txs[0].nonce, txs[0].nonce + 3))
    together = [r.getMessage() for r in caplog.records if "signed together" in r.getMessage()]
    assert together == [  # one signature batch: one nonce reservation, one JSON-RPC batch
        f"Outbox: 3 transaction(s) of the solver on Devnet B signed together, nonces {txs[0].nonce}-"
        f"{txs[0].nonce + 2}"
    ]


def test_a_payment_reorged_out_after_its_delivery_is_the_operators_loss_booked_once(early, admin_client):
    a, b, _ = early
    w3 = w3_of(a)
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    payer = w3.eth.accounts[PAYER]
    payer_before = erc20(a).functions.balanceOf(payer).call()
    snapshot = w3.provider.make_request("evm_snapshot", [])["result"]
    pay(order_id, a)
    scan_chain(31337)
    front = InventoryFront.objects.get(order_id=order_id)
    run_until(
        lambda: Order.objects.get(pk=order_id).status == "executed",
        order_id,
        what="the delivery on Devnet B, and the order executed by it",
    )

    assert w3.provider.make_request("evm_revert", [snapshot])["result"] is True  # the payment is gone
    mine(a, django_settings.REORG_GRACE_BLOCKS + 4)
    for _ in range(3):
        service_round(order_id)
        exposure_settle(31337, w3.eth.block_number)  # asked again: nothing is booked twice

    front.refresh_from_db()
    order = Order.objects.get(pk=order_id)
    assert front.lost_at is not None and front.covered_at is None
    # Executed when its delivery was in a block; the loss is said on it, and the fee it booked given back.
    assert order.status == "executed" and order.error_details.startswith("PAYMENT_REVERSED")
    assert order.settlement["paymentLost"].startswith("PAYMENT_REVERSED")
    fee = Posting.objects.get(key=f"fee:{order_id}")
    reversed_fee = Posting.objects.get(key=f"fee-reversed:{order_id}")
    assert {(e.account_id, e.side, e.amount) for e in fee.entries.all()} == {
        (e.account_id, "debit" if e.side == "credit" else "credit", e.amount)
        for e in reversed_fee.entries.all()
    }
    loss = Posting.objects.get(kind="front-loss")
    assert loss.key == f"front-loss:{order_id}"
    legs = {(entry.account.kind, entry.side, int(entry.amount)) for entry in loss.entries.all()}
    assert legs == {
        (Account.Kind.LOSS, "debit", int(front.amount)),
        (Account.Kind.OPERATOR, "credit", int(front.amount)),
    }
    incident = Incident.objects.get(kind=Incident.Kind.FRONT_LOST)
    assert incident.subject == f"order:{order_id}" and incident.details["payment_tx"] == front.payment_tx
    assert InventoryFront.objects.filter(order_id=order_id).count() == 1  # no second delivery
    assert OutboxTx.objects.filter(key__startswith=f"order:{order_id}:relay").count() == 1
    assert erc20(a).functions.balanceOf(payer).call() == payer_before  # the payer kept its money
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok


def test_what_arrives_beyond_the_payment_seen_goes_back_to_its_sender(early, admin_client):
    """An order executed on first sight was settled for the payment seen: a second payment before the first is
    counted is counted and sent back as surplus, and the payer ends up having paid the price, to the unit."""
    a, b, _ = early
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)
    scan_chain(31337)
    run_until(lambda: Order.objects.get(pk=order_id).status == "executed", order_id)
    pay(order_id, a, amount=3_000_000)  # the payer pays again, before the first payment has its confirmations

    mine(a, 4)
    run_until(
        lambda: Order.objects.get(pk=order_id).refund_txs.filter(status="success").exists(),
        order_id,
        timeout=90,
        what="the second payment refunded",
    )

    order = Order.objects.get(pk=order_id)
    assert order.status == "executed" and order.error_details is None
    deposits = sorted(order.deposit_txs.all(), key=lambda d: int(d.amount))
    assert [(int(d.amount), d.refund_reason, d.refund_amount) for d in deposits] == [
        (3_000_000, "surplus", 3_000_000),
        (PRICE, "", None),
    ]
    mine(a, 3)
    for _ in range(2):
        service_round(order_id)
    assert erc20(a).functions.balanceOf(payer).call() == before - PRICE
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok


def test_a_checkout_executed_on_first_sight_tells_the_merchant_the_payment_it_saw(early, admin_client):
    """The session completes and the merchant's transaction, receipt and `payment.completed` name the payer and
    the payment transaction seen, before the deposit is counted."""
    a, b, _ = early
    response = admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Poster",
            "token_address": b[1]["contracts"]["dUSDC"],
            "chain_id": 31338,
            "recipient_address": "0x" + "ab" * 20,
            "amount": str(PRICE),
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    link = response.json()
    started = Client().post(f"/pay/{link['short_code']}", {"pay_with": f"31337:{a[1]['contracts']['dUSDC']}"})
    assert started.status_code == 302
    session = CheckoutSession.objects.get()
    order = Order.objects.get(session_order__session=session)
    paid = pay(order.pk, a)
    scan_chain(31337)
    run_until(lambda: Order.objects.get(pk=order.pk).status == "executed", order.pk)

    order.refresh_from_db()
    assert not order.deposit_txs.exists()
    session.refresh_from_db()
    row = Transaction.objects.get(order_id=order.pk)
    payer = w3_of(a).eth.accounts[PAYER].lower()
    assert session.status == "completed" and (session.tx_hash, session.payer_address.lower()) == (
        paid.lower(),
        payer,
    )
    assert row.status == "completed" and (row.tx_hash, row.from_address.lower()) == (paid.lower(), payer)
    completed = WebhookEvent.objects.get(event_type="payment.completed")
    assert completed.data["tx_hash"] == paid.lower()


def test_an_order_that_stops_waiting_while_its_delivery_is_on_its_way_is_the_operators_loss(
    early, admin_client
):
    """Expired after the solver delivered on first sight (its session expired, say), before the delivery was
    in a block: the payment goes back to the payer as a late one, and the delivery is booked once as the
    operator's loss. An order about to expire is not delivered against on first sight at all."""
    a, b, _ = early
    soon, _ = checkout(admin_client, a[1], b[1], "swap")
    Order.objects.filter(pk=soon).update(expired_at=timezone.now() + timedelta(seconds=10))
    pay(soon, a)
    scan_chain(31337)
    assert not InventoryFront.objects.filter(order_id=soon).exists()  # it waits for its confirmations

    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    payer = w3_of(a).eth.accounts[PAYER]
    pay(order_id, a)
    before = erc20(a).functions.balanceOf(payer).call()
    scan_chain(31337)
    front = InventoryFront.objects.get(order_id=order_id)
    assert order_expire(order=Order.objects.get(pk=order_id), reason="its checkout session expired")

    run_until(lambda: InventoryFront.objects.get(pk=front.pk).lost_at is not None, order_id)
    mine(a, 3)
    for _ in range(3):
        service_round(order_id)
    assert erc20(a).functions.balanceOf(payer).call() == before  # held for staff, as every loss is
    incident = Incident.objects.get(kind=Incident.Kind.FRONT_LOST, subject=f"order:{order_id}")
    incidents_resolve(incident_ids=[incident.pk], actor="staff")
    run_until(
        lambda: Order.objects.get(pk=order_id).refund_txs.filter(status="success").exists(),
        order_id,
        timeout=90,
        what="the late payment refunded",
    )

    assert Posting.objects.filter(key=f"front-loss:{order_id}").count() == 1
    assert Incident.objects.filter(kind=Incident.Kind.FRONT_LOST, subject=f"order:{order_id}").count() == 1
    assert erc20(a).functions.balanceOf(payer).call() == before + PRICE
    assert OutboxTx.objects.filter(key__startswith=f"order:{order_id}:relay").count() == 1  # delivered once
    mine(a, 3)
    for _ in range(2):
        service_round(order_id, soon)
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok


def test_a_bursts_deliveries_in_a_block_are_shared_with_the_workers_and_each_order_executed_once(
    early, admin_client, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from chains.tasks import outbox_included_task

    a, b, _ = early
    settings.CHAINS = [  # Devnet B counts the solver's deliveries at 2 confirmations: in a block is not enough
        dict(entry, confirmations=2) if entry["chain_id"] == 31338 else entry for entry in settings.CHAINS
    ]
    settings.OUTBOX_FINISH_HERE = 1
    w3a, w3b = w3_of(a), w3_of(b)
    orders = [checkout(admin_client, a[1], b[1], "swap")[0] for _ in range(3)]
    w3b.provider.make_request("evm_setAutomine", [False])
    w3b.provider.make_request("evm_setIntervalMining", [0])
    try:
        w3a.provider.make_request("evm_setAutomine", [False])
        for order_id, payer in zip(orders, w3a.eth.accounts[1:4], strict=True):
            order = Order.objects.get(pk=order_id)
            erc20(a).functions.transfer(order.global_address, int(order.src_amount)).transact({"from": payer})
        mine(a, 1)
        w3a.provider.make_request("evm_setAutomine", [True])
        w3a.provider.make_request("evm_setIntervalMining", [1])
        scan_chain(31337)  # the three deliveries, broadcast together
        deliveries = [InventoryFront.objects.get(order_id=o).tx for o in orders]
        mine(b, 1)  # in a block on Devnet B, not yet confirmed
        queued: list[int] = []
        monkeypatch.setattr(outbox_included_task, "delay", queued.append)

        with django_capture_on_commit_callbacks(execute=True):
            outbox_check_receipts(chain_id=31338)  # no worker took any: the pass executes them all
        assert sorted(queued) == sorted(tx.pk for tx in deliveries)
        assert all(Order.objects.get(pk=o).status == "executed" for o in orders)
        with django_capture_on_commit_callbacks(execute=True):
            outbox_check_receipts(chain_id=31338)  # the next pass, still unconfirmed: nothing queued again
            for tx_id in queued:  # the workers' tasks, late: each finds its order executed
                outbox_included_task(tx_id)
        assert sorted(queued) == sorted(tx.pk for tx in deliveries)
    finally:
        w3b.provider.make_request("evm_setAutomine", [True])
        w3b.provider.make_request("evm_setIntervalMining", [1])
    for order_id in orders:
        moves = [c.to_status for c in Order.objects.get(pk=order_id).status_changes.all()]
        assert moves.count("executed") == 1 and moves.count("relay") == 1
    assert all(OutboxTx.objects.get(pk=tx.pk).status == OutboxTx.Status.BROADCAST for tx in deliveries)


def test_a_worker_told_of_a_delivery_in_its_block_executes_its_order(
    early, admin_client, settings, django_capture_on_commit_callbacks
):
    from chains.tasks import outbox_included_task

    a, b, _ = early
    settings.CHAINS = [
        dict(entry, confirmations=2) if entry["chain_id"] == 31338 else entry for entry in settings.CHAINS
    ]
    w3b = w3_of(b)
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    w3b.provider.make_request("evm_setAutomine", [False])
    w3b.provider.make_request("evm_setIntervalMining", [0])
    try:
        pay(order_id, a)
        scan_chain(31337)
        delivery = InventoryFront.objects.get(order_id=order_id).tx
        with django_capture_on_commit_callbacks(execute=True):
            outbox_included_task(delivery.pk)  # broadcast, not in a block yet: nothing moves
        assert Order.objects.get(pk=order_id).status == "scanning_deposit_transaction"
        mine(b, 1)
        with django_capture_on_commit_callbacks(execute=True):
            outbox_included_task(delivery.pk)  # the receipt it reads: in a block, successful
    finally:
        w3b.provider.make_request("evm_setAutomine", [True])
        w3b.provider.make_request("evm_setIntervalMining", [1])
    assert Order.objects.get(pk=order_id).status == "executed"
