import re

import pytest

from orders.lifecycle import order_record_deposit
from orders.models import Order
from tests.conftest import admin_sign_in
from tests.factories import CheckoutSessionFactory, FastFillFactory
from tests.orders.conftest import order_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def order(api_client, tokens):
    created = api_client.post("/orders", order_body(clientReferenceId="ref-77"), format="json").json()["data"]
    order = Order.objects.get(pk=created["id"])
    order_record_deposit(order=order, chain=8453, tx_hash="0x" + "a" * 64, amount=5, from_address=None)
    return order


@pytest.mark.parametrize(
    "url",
    [
        "/admin/orders/order/",
        "/admin/orders/order/?status__exact=scanning_deposit_transaction&type__exact=swap&src_chain=8453",
        "/admin/checkout/checkoutsession/?created_through__exact=order_interface",
        "/admin/chains/token/?chain_id=8453",
        "/admin/webhooks/webhookevent/",
    ],
)
def test_order_admin_pages_render(staff, order, url):
    CheckoutSessionFactory(expires_at=order.expired_at)
    assert staff.get(url).status_code == 200


def test_order_page_shows_its_deposits_inline(staff, order):
    page = staff.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert "0x" + "a" * 64 in page


@pytest.mark.parametrize("term", ["ref-77", "0x1111111111111111111111111111111111111111"])
def test_search_finds_orders_by_reference_and_address(staff, order, term):
    page = staff.get(f"/admin/orders/order/?q={term}").content.decode()
    assert str(order.pk) in page


def test_offline_providers_are_labelled(staff):
    assert "OFFLINE providers" in staff.get("/admin/").content.decode()


# --- settlement operations -----------------------------------------------------------------------


def _paid(api_client, **changes):
    created = api_client.post("/orders", order_body(), format="json").json()["data"]
    order = Order.objects.get(pk=created["id"])
    order_record_deposit(
        order=order, chain=8453, tx_hash="0x" + "b" * 64, amount=100_000_000, from_address="0x" + "4" * 40
    )
    if changes:
        Order.objects.filter(pk=order.pk).update(**changes)
    return Order.objects.get(pk=order.pk)


def test_order_page_shows_the_status_history_and_amounts_in_token_units(staff, api_client, tokens):
    order = _paid(api_client)
    page = staff.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert "status history" in page.lower()
    assert "quoting_after_deposit" in page and "100000000 received" in page
    assert "100 USDC" in page  # the price, in the token's units


def test_refund_now_fails_the_order_records_who_and_leaves_executed_orders_alone(
    staff, admin_user, api_client, tokens
):
    from django.contrib.admin.models import LogEntry

    paid = _paid(api_client)
    executed = _paid(api_client, status="executed")
    response = staff.post(
        "/admin/orders/order/",
        {"action": "refund_now", "_selected_action": [paid.pk, executed.pk]},
        follow=True,
    )
    assert response.status_code == 200
    paid.refresh_from_db()
    executed.refresh_from_db()
    assert (paid.status, executed.status) == ("refunding", "executed")
    change = paid.status_changes.get(to_status="failure")
    assert change.actor == f"staff:{admin_user.username}" and paid.error_details.startswith(
        "REFUNDED_BY_STAFF"
    )
    assert LogEntry.objects.filter(object_id=str(paid.pk), change_message="Refund now").exists()
    assert not LogEntry.objects.filter(object_id=str(executed.pk)).exists()
    assert "left alone" in response.content.decode()


def test_orders_without_progress_are_listed_as_stuck_and_logged(staff, api_client, tokens, caplog):
    from datetime import timedelta

    from django.utils import timezone

    from orders.settlement import settle_stuck_orders

    long_ago = timezone.now() - timedelta(hours=1)
    stuck = _paid(api_client, status="relay", status_changed_at=long_ago, settlement={"dstAmount": "1"})
    moving = _paid(api_client, status="relay", settlement={"dstAmount": "1"})
    done = _paid(api_client, status="executed", status_changed_at=long_ago)

    page = staff.get("/admin/orders/stuckorder/").content.decode()
    assert str(stuck.pk) in page
    assert str(moving.pk) not in page and str(done.pk) not in page

    with caplog.at_level("WARNING"):
        assert settle_stuck_orders() == 1
    assert f"Order {stuck.pk} has been relay since" in caplog.text


def test_settle_order_command_is_idempotent_and_refuses_unknown_orders(api_client, tokens):
    from io import StringIO

    from django.core.management import CommandError, call_command

    order = api_client.post("/orders", order_body(), format="json").json()["data"]
    out = StringIO()
    call_command("settle_order", order["id"], stdout=out)
    call_command("settle_order", order["id"], stdout=out)
    assert out.getvalue().splitlines() == [f"{order['id']}: scanning_deposit_transaction"] * 2
    with pytest.raises(CommandError, match="No order"):
        call_command("settle_order", "nope")


@pytest.mark.django_db(transaction=True)
def test_the_order_page_fits_a_1400_px_window_and_reads_as_staff_expect(
    api_client, tokens, live_server, browser_page, admin_user
):
    from django.utils import timezone

    from orders.models import OrderStatusChange, RefundTx, RelayTx

    order = Order.objects.get(pk=api_client.post("/orders", order_body(), format="json").json()["data"]["id"])
    order_record_deposit(
        order=order, chain=8453, tx_hash="0x" + "ab" * 32, amount=10_000_000, from_address="0x" + "cd" * 20
    )
    deposit = order.deposit_txs.get()
    RelayTx.objects.create(order=order, chain=42161, tx_hash="0x" + "ef" * 32, status="success")
    RefundTx.objects.create(
        order=order,
        deposit=deposit,
        chain=8453,
        tx_hash="0x" + "12" * 32,
        amount=10_000_000,
        status="success",
    )
    OrderStatusChange.objects.create(
        order=order,
        from_status="sending_token_from_vault",
        to_status="relay",
        reason="swept 10000000 into the vault at nonce 27 " * 3,
        actor="staff:operations-on-call",
        created_at=timezone.now(),
    )
    Order.objects.filter(pk=order.pk).update(settlement={"dstAmount": "9920000", "feeBps": 80})

    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 900})
    admin_sign_in(page, live_server.url, admin_user)
    page.goto(f"{live_server.url}/admin/orders/order/{order.pk}/change/")

    assert page.evaluate("document.documentElement.scrollWidth") <= 1400  # nothing overflows the window
    actor = page.get_by_text("staff:operations-on-call")
    box = actor.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1400  # the status history's last column is in view
    text = page.inner_text("body")
    assert " object (" not in text  # every row is named by what it is
    assert "10 USDC (10000000)" in text  # token units beside base units
    assert '"dstAmount": "9920000"' in page.inner_text("pre.json >> nth=1")  # JSON indented, not a raw line
    when = page.locator("td.field-when").first
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", when.inner_text().strip())
    line = page.evaluate(
        "parseFloat(getComputedStyle(document.querySelector('td.field-when span')).lineHeight)"
    )
    assert when.locator("span").bounding_box()["height"] < 2 * line  # one line, not five
    assert "Base (8453)" in page.inner_text(".field-source_chain") and "Arbitrum One (42161)" in text

    # No cell breaks a word it could keep whole: a one-word cell that wraps is broken mid-word.
    broken = page.evaluate(
        """() => [...document.querySelectorAll('.inline-group td')].filter(cell => {
              const text = cell.innerText.trim();
              if (!/^\\S{4,40}$/.test(text)) return false;
              const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
              const tops = new Set();
              for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                if (!node.textContent.trim()) continue;
                const range = document.createRange(); range.selectNodeContents(node);
                for (const rect of range.getClientRects()) tops.add(Math.round(rect.top));
              }
              return tops.size > 1;
            }).map(cell => cell.innerText.trim())"""
    )
    assert broken == []


def test_an_orders_page_names_the_checkout_session_it_pays(staff, api_client, tokens):
    order = Order.objects.get(pk=api_client.post("/orders", order_body(), format="json").json()["data"]["id"])
    Order.objects.filter(pk=order.pk).update(metadata={"checkoutSessionId": "cs_abc123"})
    page = staff.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert 'href="/admin/checkout/checkoutsession/cs_abc123/change/">cs_abc123</a>' in page
    listing = staff.get("/admin/orders/order/").content.decode()
    assert "Base (8453)" in listing


def test_an_order_interface_orders_page_links_its_session_on_the_one_session_admin(staff, api_client, tokens):
    session = CheckoutSessionFactory()
    body = order_body(checkoutSessionId=session.id)
    order_id = api_client.post("/orders", body, format="json").json()["data"]["id"]
    page = staff.get(f"/admin/orders/order/{order_id}/change/").content.decode()
    assert f'href="/admin/checkout/checkoutsession/{session.id}/change/">{session.id}</a>' in page
    assert staff.get(f"/admin/checkout/checkoutsession/{session.id}/change/").status_code == 200


def test_the_chains_list_fits_a_1280_px_window(staff, live_server, browser_page, admin_user):
    from chains.models import ChainCursor

    ChainCursor.objects.create(
        chain_id=8453, scanned_to=1000, head=1001, gas={"vault": str(10**22), "solver": str(10**18)}
    )
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    admin_sign_in(page, live_server.url, admin_user)
    page.goto(f"{live_server.url}/admin/chains/chain/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    widths = page.evaluate(
        "(() => { const r = document.querySelector('#changelist .results'); return [r.scrollWidth, r.clientWidth]; })()"
    )
    assert widths[0] <= widths[1]  # every column in view, none behind a scroll bar
    assert "Base (8453)" in page.inner_text("#result_list") and "10,000.00 ETH" in page.inner_text(
        "#result_list"
    )


@pytest.mark.parametrize("width", [390, 1280])
def test_the_one_checkout_session_list_shows_both_interfaces_sessions_without_sideways_scroll(
    live_server, browser_page, admin_user, width
):
    from tests.factories import PlatformCheckoutSessionFactory

    interface, platform = CheckoutSessionFactory(), PlatformCheckoutSessionFactory()
    page = browser_page
    page.set_viewport_size({"width": width, "height": 800})
    admin_sign_in(page, live_server.url, admin_user)
    page.goto(f"{live_server.url}/admin/checkout/checkoutsession/")
    page.screenshot(path=f"var/artifacts/admin/checkout-sessions-{width}.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    if width >= 1280:  # every column in view, none behind a scroll bar
        widths = page.evaluate(
            "(() => { const r = document.querySelector('#changelist .results'); "
            "return [r.scrollWidth, r.clientWidth]; })()"
        )
        assert widths[0] <= widths[1]
    listed = page.inner_text("#result_list")
    assert interface.id in listed and platform.id in listed
    assert "Order interface" in listed and "Platform" in listed
    page.goto(f"{live_server.url}/admin/checkout/checkoutsession/?created_through__exact=order_interface")
    assert platform.id not in page.inner_text("#result_list")


@pytest.mark.django_db(transaction=True)
def test_the_inventory_pages_fit_a_laptop_window_and_are_kept_as_screenshots(
    live_server, browser_page, admin_user
):
    """The solver's inventories in the admin, at 1280 and 390 px: their marks, limits and last refill in the
    list, the stock and refills on the page (screenshots under var/artifacts/admin/)."""
    from pathlib import Path

    from django.conf import settings

    from tests.factories import InventoryFactory, InventoryRefillFactory

    inventory = InventoryFactory()
    InventoryRefillFactory(inventory=inventory, status="filled", fill_tx="0x" + "ab" * 32)
    artifacts = Path(settings.BASE_DIR) / "var" / "artifacts" / "admin"
    artifacts.mkdir(parents=True, exist_ok=True)
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    admin_sign_in(page, live_server.url, admin_user)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{live_server.url}/admin/orders/inventory/")
        page.screenshot(path=artifacts / f"inventory-list-{width}.png", full_page=True)
        assert (
            page.evaluate("document.documentElement.scrollWidth") <= width
        )  # the page never scrolls sideways
        if width == 1280:
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # the list fits the window
            table = page.locator("#result_list")
            edge = page.evaluate("document.querySelector('#result_list').getBoundingClientRect().right")
            shown = page.evaluate("document.querySelector('.results').getBoundingClientRect().right")
            assert edge <= shown <= 1280  # every column in view, none scrolled out of its box
            assert "filled · 150000000" in table.inner_text()
        page.goto(f"{live_server.url}/admin/orders/inventory/{inventory.pk}/change/")
        page.screenshot(path=artifacts / f"inventory-page-{width}.png", full_page=True)
        assert "stock on chain now" in page.inner_text("body").lower()


def test_the_fast_fills_are_listed_for_staff_and_cannot_be_edited(staff):
    fast = FastFillFactory(accepted=True, answer="Request successfully queued for fast fill.")

    listed = staff.get("/admin/orders/fastfill/?accepted__exact=1")
    page = staff.get(f"/admin/orders/fastfill/{fast.pk}/change/")

    assert listed.status_code == 200 and fast.request_id[:12] in listed.content.decode()
    assert page.status_code == 200 and "Request successfully queued" in page.content.decode()
    assert 'name="_save"' not in page.content.decode()  # read only: the record of a call to the provider
    assert staff.get("/admin/orders/fastfill/add/").status_code == 403
    assert staff.post(f"/admin/orders/fastfill/{fast.pk}/delete/", {"post": "yes"}).status_code == 403
