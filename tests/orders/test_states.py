"""The order's state machine is declared once (orders.states): the transition function refuses any move it
does not list, settlement runs the steps it names, each move announces what it says, and the docs show it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from orders import events, lifecycle, settlement, states
from orders.models import Order
from tests.factories import DepositTxFactory, OrderFactory

pytestmark = pytest.mark.django_db
Status = Order.Status


def test_every_status_has_a_row_and_every_move_names_a_status():
    assert set(states.MACHINE) == set(Status.values)
    for state in states.MACHINE.values():
        assert state.to <= set(Status.values)
    assert {Status.EXECUTED, Status.REFUNDED} == states.FINAL


def test_every_status_is_reachable_from_a_first_one():
    reached, frontier = set(states.INITIAL), list(states.INITIAL)
    while frontier:
        for target in states.MACHINE[frontier.pop()].to:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(Status.values)


@pytest.mark.parametrize("from_status", Status.values)
def test_no_move_outside_the_table_is_made(from_status):
    for to_status in set(Status.values) - states.MACHINE[from_status].to:
        order = OrderFactory(status=from_status)
        with pytest.raises(states.ForbiddenTransition):
            lifecycle.order_transition(order, from_statuses=[from_status], to_status=to_status)
        order.refresh_from_db()
        assert order.status == from_status and not order.status_changes.exists()


def test_settlement_runs_the_steps_the_table_names():
    assert {status: step.__name__ for status, step in settlement.STEPS.items()} == {
        status: state.step for status, state in states.MACHINE.items() if state.step
    }


def test_each_move_announces_the_event_the_table_says(monkeypatch):
    heard: list[tuple[str, str]] = []
    monkeypatch.setattr(
        events,
        "_subscribers",
        [(events.OrderEvent, events.ANY, lambda e: heard.append((type(e).__name__, e.order.status)))],
    )

    def announced_on_entering(status):
        return {name for name, at in heard if at == status and name not in ("Changed", "Locking")}

    paid = OrderFactory(status=Status.SCANNING_DEPOSIT, src_amount=1_000_000)
    lifecycle.order_record_deposit(
        order=paid,
        chain=paid.src_chain,
        tx_hash="0x" + "1" * 64,
        amount=1_000_000,
        from_address="0x" + "2" * 40,
    )
    lifecycle.order_advance(order=paid, to_status=Status.SENDING_TOKEN_FROM_VAULT)
    lifecycle.order_advance(order=paid, to_status=Status.RELAY)
    lifecycle.order_mark_executed(order=paid)
    failing = OrderFactory(status=Status.RELAY)
    DepositTxFactory(order=failing)
    lifecycle.order_fail(order=failing, error="RELAY_FAILED: test")
    lifecycle.order_refunded(order=failing, refund_tx_hash="0x" + "3" * 64)
    lifecycle.order_expire(order=OrderFactory(status=Status.SCANNING_DEPOSIT), reason="not paid in time")

    for status in (
        Status.QUOTING_AFTER_DEPOSIT,
        Status.EXECUTED,
        Status.FAILURE,
        Status.REFUNDED,
        Status.EXPIRED,
    ):
        expected = {states.MACHINE[status].announces} - {""}
        assert announced_on_entering(status) == expected, status
    for status in (Status.SENDING_TOKEN_FROM_VAULT, Status.RELAY, Status.REFUNDING):
        assert announced_on_entering(status) == set(), status


def test_the_architecture_page_shows_the_table_as_declared():
    page = (Path(settings.BASE_DIR) / "docs" / "architecture.md").read_text()
    assert states.table_markdown() in page


def test_the_admins_order_page_says_what_the_status_means_and_where_it_may_go(staff):
    order = OrderFactory(status=Status.RELAY)
    page = staff.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert states.MACHINE[Status.RELAY].meaning in page
    assert "may move to executed, executing, failure" in page
