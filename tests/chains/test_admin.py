"""Staff see each chain's watcher and each order's deposits; nothing there writes deposits."""

import pytest

from chains.models import ChainCursor, Deposit
from orders.models import DepositTx, Order
from tests.orders.conftest import USDC_BASE, order_body

pytestmark = pytest.mark.django_db


def test_the_chains_page_shows_cursor_head_lag_and_last_error(staff):
    ChainCursor.objects.create(chain_id=31337, scanned_to=90, head=100, last_error="ConnectionError: refused")

    page = staff.get("/admin/chains/chaincursor/").content.decode()

    assert "Devnet A (devnet)" in page
    assert ">90<" in page and ">100<" in page and ">10<" in page
    assert "ConnectionError: refused" in page
    assert staff.get("/admin/chains/chaincursor/add/").status_code == 403
    assert staff.get("/admin/chains/deposit/add/").status_code == 403


def test_an_orders_deposits_show_block_confirmations_explorer_link_and_token_units(staff, api_client, tokens):
    order = Order.objects.get(pk=api_client.post("/orders", order_body(), format="json").json()["data"]["id"])
    ChainCursor.objects.create(chain_id=8453, scanned_to=1000, head=1005)
    DepositTx.objects.create(
        order=order,
        chain=8453,
        tx_hash="0x" + "ab" * 32,
        log_index=3,
        block_number=1001,
        block_hash="0x" + "cd" * 32,
        token_address=USDC_BASE,
        amount=12_500_000,
        from_address="0x" + "22" * 20,
    )

    page = staff.get(f"/admin/orders/order/{order.pk}/change/").content.decode()

    assert f'href="https://basescan.org/tx/0x{"ab" * 32}"' in page
    assert "12.5 USDC" in page
    assert ">5<" in page  # confirmations: head 1005 - block 1001 + 1
    assert not Deposit.objects.exists()
