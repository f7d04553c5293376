"""Settlement on two real anvil devnets: every order type delivered on Devnet B, or its deposit refunded on
Devnet A, through the transaction outbox. The steps run in this process here (the worker tests run them in a
real Celery worker); the chains, the contracts and the transactions are real."""

import pytest
from web3 import Web3

from chains.artifacts import artifact
from chains.models import Incident, OutboxTx
from chains.outbox import outbox_poll
from checkout.tasks import expire_sessions
from orders.models import Order
from orders.settlement import settle_order
from tests.orders.devnet_checkout import PAYER, checkout, drive, erc20, events, pay, receipt_on, w3_of
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def devnets(devnets_registry, settings):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0  # no worker here: the poll signs what was asked for
    return devnets_registry


@pytest.mark.parametrize(
    "order_type",
    [
        "swap",
        "x402_swap",
        "duel",
        "custom",
        "custom_exact_in",
        "mint_nft",
        "join_tournament",
        "fund_tournament",
    ],
)
def test_every_order_type_is_delivered_on_devnet_b(devnets, admin_client, order_type, settings):
    a, b = devnets
    order_id, body = checkout(admin_client, a[1], b[1], order_type)
    recipient = body["recipientAddress"]
    tournament = w3_of(b).eth.contract(
        address=b[1]["contracts"]["Tournament"], abi=artifact("Tournament")["abi"]
    )
    pool_before = tournament.functions.prizePool().call()
    vault_before = erc20(a).functions.balanceOf(settings.VAULT_ADDRESS).call()
    deposit_hash = pay(order_id, a)

    order = drive(order_id, also=_swept)

    assert order.status == "executed", order.error_details
    assert order.filled_at is not None and order.points == order.points_amount
    # The sweep moved the deposit from its forwarder into the vault.
    assert erc20(a).functions.balanceOf(order.global_address).call() == 0
    assert erc20(a).functions.balanceOf(settings.VAULT_ADDRESS).call() == vault_before + int(order.src_amount)
    delivered = int(order.settlement["dstAmount"])
    if order_type in ("swap", "x402_swap", "duel"):
        assert order.settlement["actualDstAmount"] == str(delivered)
        assert erc20(b).functions.balanceOf(Web3.to_checksum_address(recipient)).call() == delivered
        assert order.execute_tx is None
        relay = order.relay_txs.get()
        assert receipt_on(b, relay.tx_hash).status == 1
    else:
        assert "actualDstAmount" not in order.settlement
        assert receipt_on(b, order.execute_tx["txHash"]).status == 1
        if order_type == "mint_nft":
            nft = w3_of(b).eth.contract(
                address=b[1]["contracts"]["PricedNFT721"], abi=artifact("PricedNFT721")["abi"]
            )
            assert nft.functions.balanceOf(Web3.to_checksum_address(recipient)).call() == 1
        elif order_type == "join_tournament":
            assert tournament.functions.joined(Web3.to_checksum_address(recipient)).call() is True
        else:
            assert tournament.functions.prizePool().call() == pool_before + delivered
    completed = events(order_id, "payment.completed")
    assert len(completed) == 1 and completed[0]["tx_hash"] == deposit_hash
    assert [c.to_status for c in order.status_changes.all()] == [
        "quoting_after_deposit",
        "sending_token_from_vault",
        "relay",
        *(["executing"] if order.execute_tx else []),
        "executed",
    ]


def _swept(order) -> bool:
    return OutboxTx.objects.filter(key=f"order:{order.pk}:sweep", status=OutboxTx.Status.MINED).exists()


def test_the_solver_delivers_beside_the_sweep_not_after_it(devnets, admin_client):
    a, b = devnets
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)

    order = drive(order_id, also=_swept)

    assert order.status == "executed", order.error_details
    sweep = OutboxTx.objects.get(key=f"order:{order_id}:sweep")
    delivery = OutboxTx.objects.get(key=f"order:{order_id}:relay")
    assert delivery.created_at < sweep.finished_at  # asked for before the sweep was mined
    assert order.status_changes.get(to_status="relay").reason == "the solver delivers beside the sweep"
    assert not Incident.objects.exists()  # the sweep, checked when it was mined, moved what was counted


def test_a_sweep_that_fails_after_the_order_moved_on_is_an_incident(db):
    from orders.settlement import order_tx_finished
    from tests.factories import OrderFactory

    order = OrderFactory(status="executed")
    tx = OutboxTx.objects.create(
        key=f"order:{order.pk}:sweep",
        chain_id=31337,
        signer="vault",
        sender="0x" + "11" * 20,
        to="0x" + "22" * 20,
        status=OutboxTx.Status.FAILED,
        error="execution reverted",
    )

    order_tx_finished(tx)
    order_tx_finished(tx)  # told twice: one incident

    incident = Incident.objects.get()
    assert (incident.kind, incident.subject) == (Incident.Kind.SWEEP_SHORT, f"order:{order.pk}")
    assert "failed after the order moved on: execution reverted" in incident.summary
    order.refresh_from_db()
    assert order.status == "executed"


def test_a_call_that_reverts_is_refunded_to_the_payer(devnets, admin_client):
    a, b = devnets
    payer = w3_of(a).eth.accounts[PAYER]
    order_id, _ = checkout(
        admin_client,
        a[1],
        b[1],
        "custom",
        to=b[1]["contracts"]["AlwaysReverts"],
        spenderAddress=b[1]["contracts"]["AlwaysReverts"],
    )
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)
    assert erc20(a).functions.balanceOf(payer).call() < before

    order = drive(order_id, until=("refunded",))

    assert order.error_details.startswith("EXECUTION_REVERTED")
    assert "AlwaysReverts.Refused() [0x8ac5ff0b]" in order.error_details  # in words, with the raw data
    assert erc20(a).functions.balanceOf(payer).call() == before
    refund = order.refund_txs.get()
    assert (refund.status, int(refund.amount)) == ("success", int(order.src_amount))
    assert receipt_on(a, refund.tx_hash).status == 1
    failed = events(order_id, "payment.failed")
    assert len(failed) == 1 and failed[0]["refund_tx_hash"] == refund.tx_hash
    assert failed[0]["error"].startswith("EXECUTION_REVERTED")
    assert events(order_id, "payment.completed") == []
    assert [c.to_status for c in order.status_changes.all()][-3:] == ["failure", "refunding", "refunded"]


def test_an_impossible_expected_amount_is_refunded_with_slippage(devnets, admin_client):
    """Creation refuses an expectedDstAmount the payment cannot buy (test_orders); one the price moved away from
    after the order was made is refunded when it is paid."""
    a, b = devnets
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    order = Order.objects.get(pk=order_id)
    Order.objects.filter(pk=order_id).update(payload=order.payload | {"expectedDstAmount": "999000000000"})
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",))

    assert order.error_details.startswith("SLIPPAGE")
    assert erc20(a).functions.balanceOf(payer).call() == before
    assert not order.relay_txs.exists()
    assert not OutboxTx.objects.filter(
        key__in=[f"order:{order_id}:relay", f"order:{order_id}:execute"]
    ).exists()


def test_a_deposit_after_the_session_expired_is_refunded_never_executed(devnets, admin_client, settings):
    a, b = devnets
    session = admin_client.post("/checkout-sessions", {}, format="json").json()["data"]
    order_id, body = checkout(admin_client, a[1], b[1], "swap")
    # Attach the order to the session as POST /orders with checkoutSessionId would.
    Order.objects.filter(pk=order_id).update(checkout_session_id=session["id"])
    from checkout.models import CheckoutSession

    CheckoutSession.objects.filter(pk=session["id"]).update(expires_at="2000-01-01T00:00:00Z")
    expire_sessions()
    assert Order.objects.get(pk=order_id).status == "expired"
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",))

    assert erc20(a).functions.balanceOf(payer).call() == before
    assert order.deposit_txs.get().refund_reason == "late"
    assert events(order_id, "payment.completed") == []
    assert WebhookEvent.objects.filter(event_type="checkout.expired").count() == 1
    assert erc20(b).functions.balanceOf(Web3.to_checksum_address(body["recipientAddress"])).call() == 0


def test_the_surplus_over_a_fixed_price_goes_back(devnets, admin_client):
    a, b = devnets
    order_id, _ = checkout(admin_client, a[1], b[1], "mint_nft")
    price = int(Order.objects.get(pk=order_id).src_amount)
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a, amount=price + 1_500_000)

    order = drive(order_id, until=("executed",), also=lambda order: order.refund_txs.exists())

    refund = order.refund_txs.get()
    assert (refund.status, int(refund.amount)) == ("success", 1_500_000)
    assert erc20(a).functions.balanceOf(payer).call() == before - price
    assert order.status == "executed"


def test_settling_again_sends_nothing_again(devnets, admin_client):
    a, b = devnets
    order_id, body = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)
    order = drive(order_id)
    sent = {tx.key: tx.tx_hash for tx in OutboxTx.objects.all()}
    balance = erc20(b).functions.balanceOf(Web3.to_checksum_address(body["recipientAddress"])).call()

    for _ in range(3):
        assert settle_order(order_id) == "executed"
        outbox_poll()

    assert {tx.key: tx.tx_hash for tx in OutboxTx.objects.all()} == sent
    assert set(sent) == {f"order:{order.pk}:sweep", f"order:{order.pk}:relay"}
    assert erc20(b).functions.balanceOf(Web3.to_checksum_address(body["recipientAddress"])).call() == balance


def test_two_orders_for_one_contract_take_turns_with_the_solvers_allowance(devnets, admin_client):
    """Each call spends exactly the allowance its relay step set: the second order's allowance is set only
    once the first's call is done, never over it."""
    import time

    from chains.watcher import scan_chain

    a, b = devnets
    ids = [checkout(admin_client, a[1], b[1], "fund_tournament")[0] for _ in range(2)]
    for order_id in ids:
        pay(order_id, a)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and set(
        Order.objects.filter(pk__in=ids).values_list("status", flat=True)
    ) - {"executed", "refunded", "failure"}:
        scan_chain(31337)
        for order_id in ids:  # both move in every round, as two workers would
            settle_order(order_id)
        outbox_poll()
        time.sleep(0.3)

    orders = list(Order.objects.filter(pk__in=ids))
    assert [o.status for o in orders] == ["executed", "executed"], [o.error_details for o in orders]
    approvals = OutboxTx.objects.filter(key__in=[f"order:{i}:relay" for i in ids]).order_by("created_at")
    executions = OutboxTx.objects.filter(key__in=[f"order:{i}:execute" for i in ids]).order_by("created_at")
    # The second allowance was asked for after the first call had finished.
    assert approvals[1].created_at >= executions[0].finished_at
