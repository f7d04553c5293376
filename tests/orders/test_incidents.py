"""What a deposit withdrawn by a reorg means for its owner, and how an incident holds an order for staff."""

import pytest

from chains.models import Deposit, Incident, OutboxTx
from chains.watcher import handle_deposit
from orders.models import Order
from orders.settlement import order_held, settle_order, settle_stuck_orders
from tests.orders.conftest import order_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def order(api_client, tokens):
    created = api_client.post("/orders", order_body(), format="json").json()["data"]
    return Order.objects.get(pk=created["id"])


def _deposit(order: Order, amount: int, n: int = 1) -> Deposit:
    deposit = Deposit.objects.create(
        chain_id=order.src_chain,
        tx_hash="0x" + f"{n:064x}",
        log_index=0,
        block_number=100 + n,
        block_hash="0x" + "b" * 64,
        from_address="0x" + "4" * 40,
        to_address=order.global_address,
        token=order.src_token_address,
        amount=str(amount),
        owner=f"order:{order.pk}",
    )
    assert handle_deposit(deposit)
    return deposit


def _withdraw(deposit: Deposit) -> None:
    Deposit.objects.filter(pk=deposit.pk).update(status=Deposit.Status.WITHDRAWN, handled_at=None)
    deposit.refresh_from_db()
    assert handle_deposit(deposit)


def test_a_partial_deposit_withdrawn_before_anything_was_sent_just_stops_counting(order):
    deposit = _deposit(order, 40_000_000)

    _withdraw(deposit)

    recorded = order.deposit_txs.get()
    assert recorded.deposit_id == deposit.pk and recorded.withdrawn_at is not None and not recorded.counted
    order.refresh_from_db()
    assert order.status == "scanning_deposit_transaction"
    assert not Incident.objects.exists()
    # The payer's next transfer for the whole price moves the order on, the withdrawn one not counted.
    _deposit(order, 100_000_000, n=2)
    order.refresh_from_db()
    assert order.status == "quoting_after_deposit"


def test_a_counted_deposit_withdrawn_after_the_order_moved_on_holds_it_for_staff(order, staff):
    deposit = _deposit(order, 100_000_000)
    order.refresh_from_db()
    assert order.status == "quoting_after_deposit"

    _withdraw(deposit)

    incident = Incident.objects.get()
    assert (incident.kind, incident.subject) == ("deposit_reorged", f"order:{order.pk}")
    assert (
        order_held(order) and settle_order(order.pk) == "quoting_after_deposit"
    )  # nothing priced, swept, sent
    assert not OutboxTx.objects.exists()
    Order.objects.filter(pk=order.pk).update(status_changed_at="2000-01-01T00:00:00Z")
    assert settle_stuck_orders() == 0  # listed as stuck, but waits for staff instead of being driven
    # Staff look, and mark it resolved from the admin.
    page = staff.get("/admin/chains/incident/?state=open").content.decode()
    assert f"order:{order.pk}" in page
    response = staff.post(
        "/admin/chains/incident/", {"action": "mark_resolved", "_selected_action": [incident.pk]}, follow=True
    )
    assert response.status_code == 200
    incident.refresh_from_db()
    assert incident.resolved_at is not None and incident.resolved_by == "staff:admin"
    assert f"order:{order.pk}" not in staff.get("/admin/chains/incident/?state=open").content.decode()
    assert not order_held(order)  # staff may retry settlement or refund it now


def test_an_orphaned_deposit_holds_the_order_until_it_is_seen_again(order):
    deposit = _deposit(order, 100_000_000)
    Deposit.objects.filter(pk=deposit.pk).update(status=Deposit.Status.ORPHANED, orphaned_at_block=120)

    assert settle_order(order.pk) == "quoting_after_deposit"
    assert not OutboxTx.objects.exists()

    Deposit.objects.filter(pk=deposit.pk).update(status=Deposit.Status.CONFIRMED, orphaned_at_block=None)
    settle_order(order.pk)
    assert OutboxTx.objects.filter(key=f"order:{order.pk}:sweep").exists()


def test_a_deposit_of_an_unlisted_token_is_never_handed_to_its_order(order):
    deposit = Deposit.objects.create(
        chain_id=order.src_chain,
        tx_hash="0x" + "f" * 64,
        log_index=0,
        block_number=5,
        block_hash="0x" + "b" * 64,
        from_address="0x" + "4" * 40,
        to_address=order.global_address,
        token="0x" + "9" * 40,
        amount="5",
        owner=f"order:{order.pk}",
        status=Deposit.Status.UNLISTED,
    )

    assert handle_deposit(deposit) is False
    assert not order.deposit_txs.exists()
