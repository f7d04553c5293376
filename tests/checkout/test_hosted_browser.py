"""The hosted checkout in a real browser (Playwright driving Debian's Chromium) on the devnets.

A payer opens the link, fills its form with the keyboard, pays with the
devnet wallet and watches the page follow the order to "completed" and
redirect. Screenshots of each step are kept under var/artifacts/hosted/.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import zxingcpp
from django.conf import settings
from PIL import Image

from checkout.display import payment_uri
from checkout.models import CheckoutSession
from checkout.visits import flush_views
from orders.models import Order
from tests.orders.devnet_checkout import drive, random_address

ARTIFACTS = Path(settings.BASE_DIR) / "var" / "artifacts" / "hosted"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _artifacts():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)


def _unlabelled(page) -> list[str]:
    """Form controls a screen reader could not name."""
    return page.evaluate("""() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
        .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')).map(el => el.name)""")


def _contrast(page, selector: str) -> float:
    return page.evaluate(
        """(selector) => {
        const el = document.querySelector(selector), style = getComputedStyle(el);
        const rgb = s => s.match(/\\d+/g).slice(0, 3).map(Number).map(c => c / 255)
          .map(c => c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
        const lum = s => { const [r, g, b] = rgb(s); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
        const [a, b] = [lum(style.color), lum(style.backgroundColor)].sort((x, y) => y - x);
        return (a + 0.05) / (b + 0.05);
    }""",
        selector,
    )


def test_a_payer_pays_a_link_in_the_browser_and_is_redirected(
    devnets_registry, admin_client, live_server, browser_page
):
    (_, a), (_, b) = devnets_registry
    page = browser_page
    link = admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Devnet poster",
            "description": "A2, printed on demand.",
            "token_address": b["contracts"]["dUSDC"],
            "chain_id": b["chain_id"],
            "recipient_address": random_address(),
            "amount": "4000000",
            "theme_color": "#ffd84d",
            "form_schema": {"fields": [{"id": "email", "type": "email", "label": "Email", "required": True}]},
            "items": [{"name": "Poster", "amount": "4000000"}],
        },
        format="json",
    ).json()
    assert (
        admin_client.patch(
            "/api/v1/organization", {"redirect_domains": [urlsplit(live_server.url).hostname]}, format="json"
        ).status_code
        == 200
    )
    done_url = f"{live_server.url}/admin/login/?session={{SESSION_ID}}"
    page.goto(f"{live_server.url}/pay/{link['short_code']}?success_url={done_url}&utm_source=browser")
    assert page.get_by_role("heading", name="Devnet poster").is_visible()
    assert _unlabelled(page) == []
    assert _contrast(page, "button[type=submit]") >= 4.5  # a light accent gets dark text
    page.screenshot(path=ARTIFACTS / "1-link.png", full_page=True)

    page.get_by_role("button", name="Pay").click()  # nothing filled in: the server says what is missing
    assert page.get_by_text("Email is required.").is_visible()
    page.screenshot(path=ARTIFACTS / "2-errors.png", full_page=True)

    page.get_by_label("Email").focus()
    page.keyboard.type("payer@example.com")
    page.get_by_label("Pay with").select_option(f"{a['chain_id']}:{a['contracts']['dUSDC']}")
    page.get_by_label("Pay with").focus()
    page.keyboard.press("Tab")  # past the select, to the pay button
    page.keyboard.press("Enter")
    page.wait_for_selector("#deposit-address")
    session = CheckoutSession.objects.get()
    order = Order.objects.get(session_order__session=session)
    assert page.inner_text("#deposit-address") == order.global_address
    # The QR code Chromium paints reads back as the payment request: token, chain, amount, deposit address.
    painted = Image.open(io.BytesIO(page.locator(".qr svg").screenshot()))
    assert [found.text for found in zxingcpp.read_barcodes(painted)] == [
        payment_uri(order, int(order.src_amount))
    ]
    assert ":" in page.inner_text("#countdown")  # the script counts down (m:ss)
    # The address and the amount are each one click to copy, and the page says what was copied.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    from playwright.sync_api import expect

    page.get_by_role("button", name="Copy address").click()
    expect(page.locator("#copied")).to_have_text(f"Address copied: {order.global_address}")
    assert page.evaluate("navigator.clipboard.readText()") == order.global_address
    page.get_by_role("button", name="Copy amount").click()
    amount = page.inner_text("#pay-amount")
    expect(page.locator("#copied")).to_have_text(f"Amount copied: {amount}")
    assert page.evaluate("navigator.clipboard.readText()") == amount and float(amount) >= 4
    page.screenshot(path=ARTIFACTS / "3-deposit.png", full_page=True)

    settled = threading.Thread(target=drive, args=(order.pk,), kwargs={"until": ("executed",), "timeout": 90})
    # The wallet pays from the server: the page says at once that it is sending (the click's page stays until
    # the server answers, however briefly), then that it was sent until the network confirms it; the button
    # takes no second click meanwhile.
    said: list[str] = []
    page.expose_function("reportSaid", lambda text: said.append(text))
    page.evaluate("""() => document.getElementById('devnet-pay-form').addEventListener('submit',
        () => window.reportSaid(document.getElementById('devnet-pay-status').textContent))""")
    with page.expect_navigation():
        page.get_by_role("button", name="Pay with devnet wallet").click()
    assert said == ["Sending the payment from the devnet wallet…"]
    expect(page.locator("#devnet-pay-status")).to_have_text(
        "Sent from the devnet wallet. Waiting for the network to confirm it…"
    )
    expect(page.locator("#devnet-pay")).to_be_disabled()
    page.wait_for_selector("#status")
    page.screenshot(path=ARTIFACTS / "4-paid.png", full_page=True)
    settled.start()
    page.wait_for_url(f"{live_server.url}/admin/login/?session={session.id}", timeout=90_000)
    settled.join()
    session.refresh_from_db()
    assert session.status == "completed" and session.utm_source == "browser"
    page.goto(f"{live_server.url}/pay/s/{session.id}")
    assert "Payment complete" in page.inner_text("#status")
    # The completed page is the payer's receipt: what, where, when, the transactions and the way back.
    order.refresh_from_db()
    deposit = order.deposit_txs.get()
    delivery = order.relay_txs.get(status="success")
    assert page.inner_text("#receipt-amount") == f"{amount} dUSDC on Devnet A"
    receipt = page.inner_text("#receipt")
    for tx_hash in (deposit.tx_hash, delivery.tx_hash):  # shortened, the whole hash copied by its button
        assert f"{tx_hash[:8]}…{tx_hash[-6:]}" in receipt
        assert page.locator(f'#receipt [data-value="{tx_hash}"]').count() == 1
    assert page.get_by_role("link", name="Back to the shop").get_attribute("href") == (
        f"{live_server.url}/admin/login/?session={session.id}"
    )
    page.screenshot(path=ARTIFACTS / "5-completed.png", full_page=True)


def test_a_widget_in_an_iframe_counts_its_view_and_opens_the_checkout_in_a_tab(
    devnets_registry, admin_client, live_server, browser_page, settings
):
    _, (_, b) = devnets_registry
    page = browser_page
    settings.PUBLIC_BASE_URL = live_server.url
    widget = admin_client.post(
        "/api/v1/widgets",
        {
            "name": "Buy me a coffee",
            "widget_type": "checkout",
            "description": "Thanks for reading.",
            "config": {
                "recipient_address": random_address(),
                "destination_token": b["contracts"]["dUSDC"],
                "destination_chain_id": b["chain_id"],
                "amount": "3000000",
            },
            "theme": {"primary_color": "#0b6e4f", "border_radius": 4, "dark_mode": True},
        },
        format="json",
    ).json()
    # The merchant's own page (another origin: about:blank) embeds the widget.
    page.set_content(
        f'<h1>A blog post</h1><iframe title="Pay" src="{widget["url"]}" width="360" height="300">'
    )
    frame = page.frame_locator("iframe[title=Pay]")
    assert frame.get_by_role("heading", name="Buy me a coffee").is_visible()
    assert "3 dUSDC" in frame.locator("#price").inner_text()
    page.screenshot(path=ARTIFACTS / "6-widget.png", full_page=True)
    flush_views()  # as beat does every few seconds
    assert admin_client.get(f"/api/v1/widgets/{widget['id']}").json()["current_views"] == 1

    with page.expect_popup() as opened:
        frame.get_by_role("button", name="Pay").click()
    checkout = opened.value
    checkout.wait_for_load_state()
    session = CheckoutSession.objects.get()
    assert checkout.url == f"{live_server.url}/pay/s/{session.id}" and session.widget_id == widget["id"]
    assert checkout.get_by_label("Pay with").is_visible()
    assert checkout.get_by_role(
        "heading", name="Buy me a coffee"
    ).is_visible()  # the widget names the checkout
    checkout.screenshot(path=ARTIFACTS / "7-widget-checkout.png", full_page=True)
    stats = admin_client.get(f"/api/v1/widgets/{widget['id']}/stats").json()
    assert (stats["views"], stats["interactions"]) == (1, 1)
