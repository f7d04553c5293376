"""A refund from the dashboard in Chromium, on a devnet: an admin refunds part of a payment and funds it from
a browser wallet (the hosted page's wallet script: connect, switch chain, one transfer); the page follows the
refund to `succeeded` and the payer holds the amount to the unit. Screenshots at phone and desktop size under
var/artifacts/dashboard/, with axe-core's verdict."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from playwright.sync_api import expect

from chains.outbox import outbox_poll
from chains.watcher import scan_chain
from refunds.models import Refund
from refunds.tasks import settle_refund
from tests.checkout.test_wallet_browser import ALLOWED, Wallet, _inject
from tests.dashboard.conftest import PASSWORD, make_member
from tests.dashboard.test_dashboard_browser import ARTIFACTS, SIZES, _serious
from tests.factories import TransactionFactory
from tests.orders.devnet_checkout import erc20, w3_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_admin_refunds_part_of_a_payment_and_funds_it_from_a_browser_wallet(
    organization, devnets_registry, live_server, browser_page
):
    (chain_a, a), (chain_b, b) = devnets_registry
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    accounts = w3_of((chain_a, a)).eth.accounts
    payer, merchant = accounts[1], accounts[2]
    paid = TransactionFactory(
        organization=organization,
        status="completed",
        chain_id=a["chain_id"],
        token_address=a["contracts"]["dUSDC"],
        source_chain_id=a["chain_id"],
        source_token_address=a["contracts"]["dUSDC"],
        amount=10_000_000,
        from_address=payer,
    )
    admin = make_member(organization, "admin@shop.example", "admin")
    page = browser_page
    wallet = Wallet(
        account=merchant,
        chain_id=b["chain_id"],  # on the other devnet: the page asks it to switch
        nodes={a["chain_id"]: chain_a.rpc_url, b["chain_id"]: chain_b.rpc_url},
    )
    _inject(page, wallet)
    page.set_viewport_size(SIZES["desktop"])
    page.goto(f"{live_server.url}/dashboard/sign-in/")
    page.get_by_label("Email").fill(admin.user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    page.goto(f"{live_server.url}/dashboard/payments/{paid.id}")
    page.get_by_label("Amount to refund (optional)").fill("4")
    page.get_by_label("Reason").select_option("requested_by_customer")
    page.screenshot(path=ARTIFACTS / "desktop-refund-form.png", full_page=True)
    assert _serious(page) == []
    page.get_by_role("button", name="Refund", exact=True).click()
    expect(page.locator("#refund-status")).to_have_attribute("data-status", "requires_funding")
    expect(page.locator("#refund-status")).to_have_text("Awaiting your funding")
    # The address and the amount are a click each to copy (the page says what it copied), and a QR code.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.get_by_role("button", name="Copy address").click()
    expect(page.locator("#copied")).to_contain_text(page.inner_text("#funding-address"))
    assert page.evaluate("navigator.clipboard.readText()") == page.inner_text("#funding-address")
    page.get_by_role("button", name="Copy amount").click()
    assert page.evaluate("navigator.clipboard.readText()") == "4"
    expect(page.locator(".qr svg")).to_be_visible()
    refund = Refund.objects.get()
    assert page.inner_text("#funding-address") == refund.funding_address

    usdc = erc20((chain_a, a))
    before = {who: usdc.functions.balanceOf(who).call() for who in (payer, merchant)}
    fund = page.get_by_role("button", name="Fund it with Test Wallet")
    expect(fund).to_be_visible()
    page.screenshot(path=ARTIFACTS / "desktop-refund-funding.png", full_page=True)
    assert _serious(page) == []
    fund.click()
    expect(page.locator("#wallet-tx")).to_be_visible(timeout=30_000)
    assert wallet.chain_id == a["chain_id"] and "wallet_switchEthereumChain" in wallet.calls
    assert set(wallet.calls) <= ALLOWED and wallet.calls.count("eth_sendTransaction") == 1

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # the watcher, the settlement and the outbox, as the workers would
        scan_chain(a["chain_id"])
        settle_refund(refund.id)
        outbox_poll()
        refund.refresh_from_db()
        if refund.status == "succeeded":
            break
        time.sleep(0.3)
    expect(page.locator("#refund-status")).to_have_attribute(
        "data-status", "succeeded", timeout=15_000
    )  # the page follows it
    expect(page.locator("#refund-hashes")).to_contain_text("delivery")
    assert usdc.functions.balanceOf(payer).call() == before[payer] + 4_000_000
    assert usdc.functions.balanceOf(merchant).call() == before[merchant] - 4_000_000
    page.screenshot(path=ARTIFACTS / "desktop-refund-succeeded.png", full_page=True)
    page.set_viewport_size(SIZES["phone"])
    page.goto(f"{live_server.url}/dashboard/refunds/")
    expect(page.locator("#refund-rows")).to_contain_text("succeeded")
    page.screenshot(path=ARTIFACTS / "phone-refunds.png", full_page=True)
    assert _serious(page) == []
    page.goto(f"{live_server.url}/dashboard/refunds/{refund.id}")
    page.screenshot(path=ARTIFACTS / "phone-refund.png", full_page=True)
    assert _serious(page) == []
    for path in (f"/dashboard/refunds/{refund.id}", "/dashboard/refunds/", f"/dashboard/payments/{paid.id}"):
        page.goto(f"{live_server.url}{path}")  # nothing scrolls sideways on a phone
        assert page.evaluate("document.documentElement.scrollWidth") <= SIZES["phone"]["width"], path
