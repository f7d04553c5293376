"""Order and session transitions (orders.lifecycle, checkout.interface), driven through the services."""

from datetime import timedelta

import pytest
from django.utils import timezone

from orders import lifecycle
from orders.models import Order, RefundTx
from tests.factories import CheckoutSessionFactory
from tests.orders.conftest import order_body
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(organization):
    return CheckoutSessionFactory(organization=organization, expires_at=timezone.now() + timedelta(hours=1))


def _order(api_client, session, order_type="swap"):
    body = order_body(order_type, checkoutSessionId=str(session.pk))
    return Order.objects.get(pk=api_client.post("/orders", body, format="json").json()["data"]["id"])


def _walk_to_relay(order):
    for status in ("sending_token_from_vault", "relay"):
        assert lifecycle.order_advance(order=order, to_status=status)


def test_partial_deposits_are_summed_until_src_amount(api_client, tokens, session):
    order = _order(api_client, session)

    lifecycle.order_record_deposit(
        order=order, chain=8453, tx_hash="0x" + "a" * 64, amount=60_000_000, from_address=None
    )
    order.refresh_from_db()
    assert order.status == "scanning_deposit_transaction"

    lifecycle.order_record_deposit(
        order=order, chain=8453, tx_hash="0x" + "b" * 64, amount=40_000_000, from_address="0x" + "4" * 40
    )
    order.refresh_from_db()
    session.refresh_from_db()
    assert order.status == "quoting_after_deposit"
    assert order.received_deposit_at is not None
    assert session.status == "processing"


def test_the_same_deposit_twice_counts_once(api_client, tokens, session):
    order = _order(api_client, session)
    for _ in range(2):
        lifecycle.order_record_deposit(
            order=order, chain=8453, tx_hash="0x" + "c" * 64, amount=60_000_000, from_address=None
        )
    order.refresh_from_db()
    assert order.deposit_txs.count() == 1
    assert order.status == "scanning_deposit_transaction"


def test_happy_path_of_a_swap_awards_points_and_completes_the_session(
    api_client, tokens, session, organization
):
    order = _order(api_client, session)
    lifecycle.order_record_deposit(
        order=order, chain=8453, tx_hash="0x" + "d" * 64, amount=100_000_000, from_address="0x" + "4" * 40
    )
    _walk_to_relay(order)

    assert lifecycle.order_mark_executed(order=order, actual_dst_amount="99000000")

    order.refresh_from_db()
    session.refresh_from_db()
    assert order.status == "executed"
    assert order.points == 100  # $100 at one point per USD
    assert order.settlement == {"actualDstAmount": "99000000"}
    assert session.status == "completed"  # the order interface shows it as `complete`
    types = list(WebhookEvent.objects.order_by("created_at").values_list("event_type", flat=True))
    assert types == ["checkout.completed", "payment.completed"]
    payment = WebhookEvent.objects.get(event_type="payment.completed").data
    assert payment["id"] == str(order.id)
    assert payment["sender_address"] == "0x" + "4" * 40
    assert payment["checkoutSession"]["metadata"] == session.metadata
    detail = api_client.get(f"/orders/{order.id}").json()["data"]
    assert detail["points"] == 100
    assert len(detail["depositTxs"]) == 1


def test_contract_types_execute_before_executed(api_client, tokens, session):
    order = _order(api_client, session, "mint_nft")
    lifecycle.order_record_deposit(
        order=order, chain=8453, tx_hash="0x" + "e" * 64, amount=100_000_000, from_address=None
    )
    _walk_to_relay(order)
    assert lifecycle.order_mark_executed(order=order) is False  # must pass through executing
    assert lifecycle.order_advance(order=order, to_status="executing")
    assert lifecycle.order_mark_executed(order=order, execute_tx={"chain": 42161, "txHash": "0x" + "f" * 64})
    order.refresh_from_db()
    assert order.execute_tx == {"chain": 42161, "txHash": "0x" + "f" * 64}


def test_failure_after_deposit_refunds_and_expires_the_session(api_client, tokens, session):
    order = _order(api_client, session)
    lifecycle.order_record_deposit(
        order=order, chain=8453, tx_hash="0x" + "1" * 64, amount=100_000_000, from_address=None
    )

    assert lifecycle.order_fail(order=order, error="relay reverted")
    order.refresh_from_db()
    session.refresh_from_db()
    assert (order.status, order.error_details) == ("refunding", "relay reverted")
    # The session can never complete now: it expires (its processing ended), and the merchant is told.
    assert session.status == "expired"
    assert not WebhookEvent.objects.filter(
        event_type="payment.failed"
    ).exists()  # not until the money is back

    RefundTx.objects.create(
        order=order,
        deposit=order.deposit_txs.get(),
        chain=8453,
        tx_hash="0x" + "2" * 64,
        amount=100_000_000,
        status="success",
    )
    assert lifecycle.order_refunded(order=order, refund_tx_hash="0x" + "2" * 64)
    order.refresh_from_db()
    assert order.status == "refunded"
    assert api_client.get(f"/orders/{order.id}").json()["data"]["refundTxs"][0]["status"] == "success"
    failed = WebhookEvent.objects.get(event_type="payment.failed").data
    assert (failed["refund_tx_hash"], failed["error"]) == ("0x" + "2" * 64, "relay reverted")
    assert [c.to_status for c in order.status_changes.all()] == [
        "quoting_after_deposit",
        "failure",
        "refunding",
        "refunded",
    ]


def test_failure_before_deposit_expires_the_open_session(api_client, tokens, session):
    order = _order(api_client, session)
    assert lifecycle.order_fail(order=order, error="quote expired")
    order.refresh_from_db()
    session.refresh_from_db()
    assert order.status == "failure"
    assert session.status == "expired"
    assert set(WebhookEvent.objects.values_list("event_type", flat=True)) == {
        "checkout.expired",
        "payment.failed",
    }


def test_terminal_orders_do_not_move(api_client, tokens, session):
    order = _order(api_client, session)
    Order.objects.filter(pk=order.pk).update(status="expired")
    order.refresh_from_db()
    assert lifecycle.order_fail(order=order, error="late") is False
    assert lifecycle.order_advance(order=order, to_status="relay") is False
