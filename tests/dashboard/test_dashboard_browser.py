"""The dashboard in Chromium: an owner signs in, sets up two-factor sign-in, finds a payment; every page at
phone and desktop size, kept as screenshots under var/artifacts/dashboard/, with axe-core's verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django_otp.plugins.otp_totp.models import TOTPDevice
from playwright.sync_api import expect

from orders.models import OrderStatusChange
from tests.dashboard.conftest import PASSWORD, code_for, make_member
from tests.dashboard.test_webhooks import _failed
from tests.factories import (
    CustomerFactory,
    DepositTxFactory,
    DiscountCodeFactory,
    OrderFactory,
    PaymentLinkFactory,
    PaymentLinkItemFactory,
    PlatformCheckoutSessionFactory,
    ProductFactory,
    RefundTxFactory,
    RevenueDayFactory,
    TransactionFactory,
)
from tests.orders.conftest import RECIPIENT, USDC_BASE
from tests.webhooks.conftest import make_endpoint

ARTIFACTS = Path(settings.BASE_DIR) / "var" / "artifacts" / "dashboard"
AXE = Path(settings.BASE_DIR) / "tools" / "node_modules" / "axe-core" / "axe.min.js"
SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 800}}

pytestmark = pytest.mark.django_db(transaction=True)


# Tables whose columns their scrolling card cuts, and the section bar's tabs as the screen shows them.
_CUT_TABLES = """() => [...document.querySelectorAll('.scroll')]
    .filter(box => box.scrollWidth > box.clientWidth + 2).map(box => box.innerText.slice(0, 40))"""
_TABS = """() => { const bar = document.querySelector('nav.sections'); if (!bar) return [];
    const edge = bar.getBoundingClientRect();
    return [...bar.querySelectorAll('a')].map(a => { const r = a.getBoundingClientRect();
        return {name: a.innerText, current: a.getAttribute('aria-current') === 'page',
                whole: r.left >= edge.left - 1 && r.right <= edge.right + 1}; }); }"""


def _serious(page) -> list:
    if not AXE.exists():
        return []
    page.evaluate(AXE.read_text())
    return page.evaluate(
        """() => axe.run(document).then(r => r.violations
            .filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => v.id))"""
    )


def test_an_owner_signs_in_with_two_factor_and_finds_a_payment(
    organization, tokens, live_server, browser_page, httpserver
):
    from django.utils import timezone

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    owner = make_member(organization, "owner@shop.example", "owner")
    order = OrderFactory(organization=organization)
    OrderStatusChange.objects.create(
        order=order, from_status="scanning_deposit_transaction", to_status="executed", reason="delivered"
    )
    payment = TransactionFactory(
        organization=organization, order_id=order.pk, status="completed", amount_usd=4
    )
    # A payment refunded in full, its timeline holding a long hash (it widened the page to 597 px on a phone).
    failed_order = OrderFactory(organization=organization, status="refunded")
    deposit = DepositTxFactory(order=failed_order, amount=1_000_000, from_address="0x" + "7" * 40)
    RefundTxFactory(order=failed_order, deposit=deposit, amount=1_000_000)
    for to_status, reason in (
        ("expired", "its checkout session expired (expired_by_merchant)"),
        ("refunding", "it expired holding part of its price: that goes back to the payer"),
        ("refunded", "refunded in 0x" + "c8" * 32),
    ):
        OrderStatusChange.objects.create(order=failed_order, to_status=to_status, reason=reason)
    refunded_payment = TransactionFactory(
        organization=organization, order_id=failed_order.pk, status="failed", amount=1_000_000
    )
    RevenueDayFactory(organization=organization, day=timezone.now().date(), amount_usd=4, transactions=1)
    link = PaymentLinkFactory(organization=organization, name="Poster A2")
    PaymentLinkItemFactory(payment_link=link, name="Frame", amount=2_500_000)
    session = PlatformCheckoutSessionFactory(payment_link=link, customer_email="ada@example.com")
    product = ProductFactory(organization=organization, name="Mug")
    code = DiscountCodeFactory(organization=organization, code="SPRING10")
    customer = CustomerFactory(organization=organization, name="Ada", email="ada@example.com")
    httpserver.expect_request("/hooks").respond_with_data("ok")
    endpoint, _ = make_endpoint(organization, httpserver.url_for("/hooks"))
    failed = _failed(endpoint)
    page = browser_page
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)

    page.goto(f"{live_server.url}/dashboard/")
    expect(page.get_by_role("heading", name="Sign in to the dashboard")).to_be_visible()
    page.screenshot(path=ARTIFACTS / "phone-sign-in.png", full_page=True)
    page.get_by_label("Email").fill("owner@shop.example")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#form-error")).to_have_text("That email and password do not match a member.")
    errors.clear()  # the refused sign-in is a 400, which the console notes
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Set up two-factor sign-in")).to_be_visible()
    assert page.locator(".qr svg").count() == 1
    page.screenshot(path=ARTIFACTS / "phone-two-factor.png", full_page=True)
    device = TOTPDevice.objects.get(user=owner.user, confirmed=False)
    page.get_by_label("Code", exact=True).fill(code_for(device))  # what the authenticator app shows
    page.get_by_role("button", name="Turn on two-factor sign-in").click()
    expect(page.get_by_role("heading", name="Save your recovery codes")).to_be_visible()
    assert page.locator("#recovery-codes li").count() == 10
    page.screenshot(path=ARTIFACTS / "phone-recovery-codes.png", full_page=True)
    page.get_by_role("link", name="I have saved them").click()
    expect(page.get_by_role("heading", name="Home")).to_be_visible()
    assert page.inner_text("#today-revenue") == "$4.00"

    cut = []  # (size, page, what): every page's and width's, said at once
    for size, viewport in {**SIZES, "wide": {"width": 1440, "height": 900}}.items():
        page.set_viewport_size(viewport)
        pages = {
            "home": "/dashboard/",
            "payments": "/dashboard/payments/",
            "payment": f"/dashboard/payments/{payment.id}",
            "payment-refunded": f"/dashboard/payments/{refunded_payment.id}",
            "account": "/dashboard/account/",
            "links": "/dashboard/links/",
            "link": f"/dashboard/links/{link.id}",
            "link-new": "/dashboard/links/new/",
            "link-edit": f"/dashboard/links/{link.id}/edit",
            "checkout": f"/dashboard/checkouts/{session.id}",
            "webhooks": "/dashboard/webhooks/",
            "webhook": f"/dashboard/webhooks/{endpoint.id}",
            "webhook-new": "/dashboard/webhooks/new/",
            "webhook-edit": f"/dashboard/webhooks/{endpoint.id}/edit",
            "keys": "/dashboard/keys/",
            "team": "/dashboard/team/",
            "settings": "/dashboard/settings/",
            "analytics": "/dashboard/analytics/",
            "products": "/dashboard/products/",
            "product": f"/dashboard/products/{product.id}",
            "product-new": "/dashboard/products/new/",
            "discounts": "/dashboard/discount-codes/",
            "discount": f"/dashboard/discount-codes/{code.id}",
            "discount-new": "/dashboard/discount-codes/new/",
            "customers": "/dashboard/customers/",
            "customer": f"/dashboard/customers/{customer.id}",
            "customer-new": "/dashboard/customers/new/",
        }
        for name, path in pages.items():
            page.goto(f"{live_server.url}{path}")
            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"] + 1
            assert _serious(page) == [], (size, name)
            # No table is cut: each fits its card, whatever scrolls sideways is only a spare few pixels.
            cut += [(size, name, table) for table in page.evaluate(_CUT_TABLES)]
            # Every section is there in whole on a wide screen; on a phone the row scrolls and the current
            # section is in view, never cut to its first letter.
            tabs = page.evaluate(_TABS)
            if size != "phone":
                cut += [(size, name, f"tab {t['name']}") for t in tabs if not t["whole"]]
                assert "API keys" in [t["name"] for t in tabs]
            else:
                cut += [(size, name, f"tab {t['name']}") for t in tabs if t["current"] and not t["whole"]]
            page.screenshot(path=ARTIFACTS / f"{size}-{name}.png", full_page=True)
    assert cut == []

    # The filter updates the table in place (htmx) and the address with it.
    page.goto(f"{live_server.url}/dashboard/payments/")
    page.get_by_label("Status").select_option("failed")
    expect(page.locator("#payments-table")).to_contain_text(refunded_payment.id)
    expect(page.locator("#payments-table")).not_to_contain_text(payment.id)
    expect(page).to_have_url(f"{live_server.url}/dashboard/payments/?q=&status=failed")
    page.get_by_label("Status").select_option("completed")
    expect(page.locator("#payments-table")).to_contain_text(payment.id)
    page.get_by_role("link", name=payment.id).click()
    expect(page.locator("#timeline")).to_contain_text("Delivered")

    # A payment refunded in full says so, and its timeline speaks in words and token amounts.
    page.goto(f"{live_server.url}/dashboard/payments/{refunded_payment.id}")
    expect(page.locator(".money").first).to_have_text("Nothing: the payment did not go through")
    expect(page.locator("#timeline")).to_contain_text("You expired the checkout")
    expect(page.locator("#timeline")).to_contain_text("1 USDC goes back to the payer on Base")
    assert "expired_by_merchant" not in page.inner_text("#timeline") and "refunding" not in page.inner_text(
        "#timeline"
    )

    # A failed webhook delivery, found in the endpoint's log and sent again.
    page.goto(f"{live_server.url}/dashboard/webhooks/{endpoint.id}")
    page.locator(f"#delivery-{failed.id} summary").click()
    expect(page.locator(f"#delivery-{failed.id}")).to_contain_text("HTTP 500")
    page.get_by_role("button", name="Retry this delivery").click()
    expect(page.locator("#flash")).to_have_text(f"Retried {failed.id}: delivered (200).")

    # A form's errors are said beside their fields, then the fixed form saves.
    page.goto(f"{live_server.url}/dashboard/products/new/")
    page.get_by_label("Name").fill("Poster")
    page.get_by_label("Paid in").select_option(f"8453:{USDC_BASE}")
    page.get_by_label("Price (for a fixed price)").fill("1.0000001")
    page.get_by_role("button", name="Create the product").click()
    expect(page.locator("#amount-error")).to_have_text("At most 6 decimals for USDC.")
    expect(page.get_by_label("Price (for a fixed price)")).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=ARTIFACTS / "desktop-product-errors.png", full_page=True)
    errors.clear()  # the refused form is a 400, which the console notes
    page.get_by_label("Price (for a fixed price)").fill("15")
    page.get_by_label("Paid to (address; empty: your default)").fill(RECIPIENT)
    page.get_by_role("button", name="Create the product").click()
    expect(page.locator("h1")).to_have_text("Poster")
    page.get_by_role("button", name="Make a payment link").click()
    expect(page.locator("#link-price")).to_have_text("15 USDC")
    page.get_by_label("Item name").fill("Frame")
    page.get_by_label("Price each, in USDC").fill("2.5")
    page.get_by_role("button", name="Add the item").click()
    expect(page.locator("#flash")).to_have_text("Item added.")

    # A key: created, shown once, revoked.
    page.goto(f"{live_server.url}/dashboard/keys/")
    page.get_by_label("Name").fill("shop backend")
    page.get_by_label("write").check()
    page.get_by_role("button", name="Create the key").click()
    expect(page.locator("#new-key")).to_contain_text("svc_")
    page.screenshot(path=ARTIFACTS / "desktop-key-created.png", full_page=True)
    page.get_by_role("button", name="Revoke shop backend").click()
    expect(page.locator("table")).to_contain_text("revoked")
    assert errors == []  # nothing refused by the CSP, no script error


def test_an_invited_member_joins_in_the_browser_and_as_a_viewer_sees_nothing_to_change(
    organization, live_server, browser_page, mailoutbox
):
    import re

    from webhooks import notifications
    from webhooks.models import NotificationEmail

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    admin = make_member(organization, "admin@shop.example", "admin")
    page = browser_page
    page.goto(f"{live_server.url}/dashboard/sign-in/")
    page.get_by_label("Email").fill(admin.user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{live_server.url}/dashboard/team/")
    page.get_by_label("Email").fill("viewer@shop.example")
    page.get_by_label("Role").select_option("viewer")
    page.get_by_role("button", name="Send the invitation").click()
    expect(page.locator("#flash")).to_contain_text("Invitation sent to viewer@shop.example")
    notifications.send(NotificationEmail.objects.get(event_type="member.invited").id)  # as the worker does
    link = re.search(r"https?://\S+/dashboard/invitations/\S+/", mailoutbox[0].body).group(0)

    newcomer = page.context.browser.new_page(viewport={"width": 390, "height": 844})
    newcomer.goto(f"{live_server.url}/dashboard/" + link.split("/dashboard/", 1)[1])
    newcomer.get_by_label("Password", exact=True).fill(PASSWORD)
    newcomer.get_by_label("The same password again").fill(PASSWORD)
    newcomer.screenshot(path=ARTIFACTS / "phone-invitation.png", full_page=True)
    newcomer.get_by_role("button", name="Join").click()
    expect(newcomer.get_by_role("heading", name="Home")).to_be_visible()
    for path in ("/dashboard/links/", "/dashboard/team/", "/dashboard/webhooks/"):
        newcomer.goto(f"{live_server.url}{path}")
        assert newcomer.locator("main form[method=post]").count() == 0, path  # nothing to change
    newcomer.goto(f"{live_server.url}/dashboard/keys/")
    expect(newcomer.get_by_role("heading", name="Not allowed")).to_be_visible()


def test_a_link_made_in_the_dashboard_is_paid_on_the_devnet_and_the_payment_appears(
    organization, devnets_registry, live_server, browser_page, settings
):
    import threading

    from checkout.hosted import PAYER_ACCOUNT
    from checkout.models import CheckoutSession
    from orders.models import Order
    from tests.orders.devnet_checkout import drive, erc20, random_address, w3_of

    (chain_a, a), (chain_b, b) = devnets_registry
    settings.PUBLIC_BASE_URL = live_server.url
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    admin = make_member(organization, "admin@shop.example", "admin")
    page = browser_page
    page.set_viewport_size(SIZES["desktop"])
    page.goto(f"{live_server.url}/dashboard/sign-in/")
    page.get_by_label("Email").fill(admin.user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{live_server.url}/dashboard/links/new/")
    page.get_by_label("Name").fill("Devnet print")
    page.get_by_label("Paid in").select_option(f"{b['chain_id']}:{b['contracts']['dUSDC']}")
    page.get_by_label("Price").fill("3")
    merchant = random_address()
    page.get_by_label("Paid to (address)").fill(merchant)
    page.get_by_role("button", name="Create the link").click()
    share = page.inner_text("#share-url")
    page.screenshot(path=ARTIFACTS / "desktop-link-created.png", full_page=True)

    payer = page.context.browser.new_page(viewport=SIZES["phone"])  # the payer, elsewhere
    payer.goto(share)
    payer.get_by_label("Pay with").select_option(f"{a['chain_id']}:{a['contracts']['dUSDC']}")
    payer.get_by_role("button", name="Pay").click()
    payer.wait_for_selector("#deposit-address")
    session = CheckoutSession.objects.get()
    order = Order.objects.get(session_order__session=session)
    settled = threading.Thread(target=drive, args=(order.pk,), kwargs={"until": ("executed",), "timeout": 90})
    token_a, token_b = erc20((chain_a, a)), erc20((chain_b, b))
    payer_address = w3_of((chain_a, a)).eth.accounts[PAYER_ACCOUNT]

    def balances() -> dict[str, int]:
        return {
            "payer": token_a.functions.balanceOf(payer_address).call(),
            "vault": token_a.functions.balanceOf(settings.VAULT_ADDRESS).call(),
            "merchant": token_b.functions.balanceOf(merchant).call(),
            "solver": token_b.functions.balanceOf(settings.SOLVER_ADDRESS).call(),
        }

    before = balances()
    payer.get_by_role("button", name="Pay with devnet wallet").click()
    settled.start()
    expect(payer.locator("#status")).to_contain_text("Payment complete", timeout=90_000)
    settled.join()
    # To the unit: the payer sent the order's price into the vault; the solver paid the merchant what arrived.
    order.refresh_from_db()
    price, delivered = int(order.src_amount), int(order.settlement["dstAmount"])
    assert balances() == {
        "payer": before["payer"] - price,
        "vault": before["vault"] + price,
        "merchant": before["merchant"] + delivered,
        "solver": before["solver"] - delivered,
    }
    assert delivered == int(order.payload["expectedDstAmount"]) > 0

    page.goto(f"{live_server.url}/dashboard/payments/")
    expect(page.locator("#payments-table")).to_contain_text("completed")
    expect(page.locator("#payments-table")).to_contain_text("dUSDC")  # 3 less the service fee
    expect(page.locator("#payments-table")).to_contain_text("Devnet B")
    page.screenshot(path=ARTIFACTS / "desktop-payment-appeared.png", full_page=True)
