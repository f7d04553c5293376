"""The ledger for staff: the postings of an order on its page, the entries by account and chain, and a
reconciliation difference shown on every admin page until it is resolved."""

import pytest

from ledger.models import ReconcileRun
from ledger.postings import credit, debit, post
from tests.factories import OrderFactory, ReconcileRunFactory
from tests.orders.conftest import USDC_BASE

pytestmark = pytest.mark.django_db

VAULT = "0x" + "f3" * 20
DEPOSIT = "0x" + "d0" * 20
PAYER = "0x" + "aa" * 20
DIFFERENCE = {
    "address": VAULT,
    "kind": "vault",
    "token": USDC_BASE.lower(),
    "expected": "5000000",
    "in_flight": "0",
    "actual": "3765433",
    "difference": "-1234567",
}


def deposit_posting(order):
    return post(
        key=f"deposit:{order.pk}",
        kind="deposit",
        legs=[
            credit(8453, USDC_BASE, "payer", PAYER, 2_500_000),
            debit(8453, USDC_BASE, "deposit_address", DEPOSIT, 2_500_000),
        ],
        order_id=order.pk,
        owner=f"order:{order.pk}",
        chain_id=8453,
        block_number=77,
    )


def test_an_orders_page_lists_its_postings_and_the_ledger_page_filters_entries(staff, tokens):
    order = OrderFactory()
    posting = deposit_posting(order)

    page = staff.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert f"/admin/ledger/posting/{posting.pk}/change/" in page
    assert "deposit_address" in page and "2.5 USDC" in page

    vaults = staff.get("/admin/ledger/entry/?account__kind=vault").content.decode()
    payers = staff.get("/admin/ledger/entry/?account__kind=payer&account__chain_id=8453").content.decode()
    assert posting.key not in vaults and posting.key in payers
    assert staff.get(f"/admin/ledger/posting/{posting.pk}/change/").status_code == 200
    assert staff.get("/admin/ledger/posting/add/").status_code == 403


def test_a_difference_is_a_banner_on_every_admin_page_until_resolved(staff):
    run = ReconcileRunFactory(rows=[DIFFERENCE], differences=1)

    for path in ("/admin/", "/admin/orders/order/"):
        assert "The ledger and the chains disagree" in staff.get(path).content.decode()
    detail = staff.get(f"/admin/ledger/reconcilerun/{run.pk}/change/").content.decode()
    assert "-1234567" in detail

    staff.post(
        "/admin/ledger/reconcilerun/", {"action": "resolve", "_selected_action": [run.pk]}, follow=True
    )

    run.refresh_from_db()
    assert run.resolved_at is not None and run.resolved_by == "admin"
    assert "The ledger and the chains disagree" not in staff.get("/admin/").content.decode()


def test_a_run_that_could_not_compare_is_shown_and_a_clean_one_is_not(staff):
    ReconcileRunFactory(chain_id=31337, rows=[], error="ConnectionError: refused")
    ReconcileRunFactory(chain_id=8453, rows=[], resolved_at=None)

    page = staff.get("/admin/").content.decode()

    assert "could not reconcile (ConnectionError: refused)" in page
    assert "chain 8453" not in page
    assert ReconcileRun.objects.count() == 2
