"""Property: whatever sequence of payments the devnets see (exact, in two parts, beyond a fixed price, late,
refused for slippage, reverted by the called contract), after each one every posting balances and
`reconcile` finds the vault, the solver and the deposit addresses holding exactly what the ledger says."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.reconcile import reconcile_chain
from orders.models import Order
from orders.tasks import expire_unpaid_orders
from tests.ledger.test_reconcile import devnets, every_posting_balances, settle_everywhere  # noqa: F401
from tests.orders.devnet_checkout import checkout, drive, pay

pytestmark = pytest.mark.django_db


def exact(client, a, b):
    order_id, _ = checkout(client, a[1], b[1], "swap")
    pay(order_id, a)
    return drive(order_id)


def in_two_parts(client, a, b):
    order_id, _ = checkout(client, a[1], b[1], "x402_swap")
    price = int(Order.objects.get(pk=order_id).src_amount)
    pay(order_id, a, amount=price // 3)
    pay(order_id, a, amount=price - price // 3)
    return drive(order_id)


def beyond_the_price(client, a, b):
    order_id, _ = checkout(client, a[1], b[1], "mint_nft")
    price = int(Order.objects.get(pk=order_id).src_amount)
    pay(order_id, a, amount=price + 1_234_567)
    return drive(order_id, also=lambda order: order.refund_txs.filter(status="success").exists())


def late(client, a, b):
    order_id, _ = checkout(client, a[1], b[1], "swap")
    Order.objects.filter(pk=order_id).update(expired_at=timezone.now() - timedelta(minutes=1))
    expire_unpaid_orders()
    pay(order_id, a)
    return drive(order_id, until=("refunded",))


def slippage(client, a, b):
    order_id, _ = checkout(client, a[1], b[1], "swap", expectedDstAmount="999000000000")
    pay(order_id, a)
    return drive(order_id, until=("refunded",))


def reverted(client, a, b):
    target = b[1]["contracts"]["AlwaysReverts"]
    order_id, _ = checkout(client, a[1], b[1], "custom", to=target, spenderAddress=target)
    pay(order_id, a)
    return drive(order_id, until=("refunded",))


PAYMENTS = [exact, in_two_parts, beyond_the_price, late, slippage, reverted]
ENDS = {exact: "executed", in_two_parts: "executed", beyond_the_price: "executed"}


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,  # the same sequences on every run: a devnet test's time is bounded
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sequence=st.lists(st.sampled_from(PAYMENTS), min_size=2, max_size=3))
def test_after_every_payment_the_ledger_balances_and_reconciles(devnets, admin_client, sequence):  # noqa: F811
    a, b = devnets
    for payment in sequence:
        order = payment(admin_client, a, b)
        assert order.status == ENDS.get(payment, "refunded"), (payment.__name__, order.error_details)
        settle_everywhere(devnets)
        every_posting_balances()
        for chain_id in (31337, 31338):
            run = reconcile_chain(chain_id)
            assert run.ok, (
                payment.__name__,
                chain_id,
                run.error,
                [r for r in run.rows if r["difference"] != "0"],
            )
