"""An order that stops waiting while it holds part of its price gives that back at once; the stuck-order
sweep finds every order that holds money, whatever its status."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from orders import lifecycle
from orders.models import Order
from orders.settlement import orders_stuck
from tests.conftest import queued_work
from tests.factories import DepositTxFactory, OrderFactory, RefundTxFactory

pytestmark = pytest.mark.django_db

LONG_AGO = timezone.now() - timedelta(hours=2)


def test_an_order_expiring_with_part_of_its_price_goes_to_refunding_and_asks_for_settlement(
    django_capture_on_commit_callbacks,
):
    order = OrderFactory(status=Order.Status.SCANNING_DEPOSIT, src_amount=4_000_000)
    DepositTxFactory(order=order, amount=2_000_000, from_address="0x" + "11" * 20)
    with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
        assert lifecycle.order_expire(order=order, reason="its checkout session expired (api)")
    order.refresh_from_db()
    assert order.status == Order.Status.REFUNDING
    steps = list(order.status_changes.order_by("id").values_list("from_status", "to_status"))
    assert steps == [("scanning_deposit_transaction", "expired"), ("expired", "refunding")]
    assert len(queued_work(callbacks)) == 1  # the settlement task, queued once the expiry commits


def test_an_unpaid_order_just_expires(django_capture_on_commit_callbacks):
    order = OrderFactory(status=Order.Status.SCANNING_DEPOSIT)
    with django_capture_on_commit_callbacks() as callbacks:
        assert lifecycle.order_expire(order=order, reason="not paid in time")
    order.refresh_from_db()
    assert order.status == Order.Status.EXPIRED and queued_work(callbacks) == []
    assert not lifecycle.order_expire(order=order, reason="again")  # only a waiting order expires


def test_the_stuck_sweep_lists_every_order_that_still_owes_a_deposit_back():
    # Left behind by the old expiry: expired with half its price at the deposit address.
    expired_holding = OrderFactory(status=Order.Status.EXPIRED, status_changed_at=LONG_AGO)
    DepositTxFactory(order=expired_holding, amount=500_000, created_at=LONG_AGO)
    # Executed, with a surplus flagged for refund and never sent.
    surplus = OrderFactory(status=Order.Status.EXECUTED, status_changed_at=LONG_AGO)
    DepositTxFactory(
        order=surplus, amount=2_000_000, refund_reason="surplus", refund_amount=1_000_000, created_at=LONG_AGO
    )
    # Not stuck: a surplus already refunded, an expired order that received nothing, a recent late payment.
    refunded = OrderFactory(status=Order.Status.EXECUTED, status_changed_at=LONG_AGO)
    paid_back = DepositTxFactory(
        order=refunded,
        amount=2_000_000,
        refund_reason="surplus",
        refund_amount=1_000_000,
        created_at=LONG_AGO,
    )
    RefundTxFactory(order=refunded, deposit=paid_back, amount=1_000_000)
    OrderFactory(status=Order.Status.EXPIRED, status_changed_at=LONG_AGO)
    recent = OrderFactory(status=Order.Status.EXPIRED, status_changed_at=LONG_AGO)
    DepositTxFactory(order=recent, refund_reason="late", refund_amount=1_000_000)
    settling = OrderFactory(status=Order.Status.RELAY, status_changed_at=LONG_AGO)

    assert set(orders_stuck()) == {expired_holding, surplus, settling}
