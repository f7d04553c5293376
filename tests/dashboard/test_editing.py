"""Editing in the dashboard: a payment link and its items, products, discount codes, customers and webhook
endpoints. Each write goes through the API's serializer and service (the API's rules, audited with the
member), says each error beside its field and then changes nothing, happens once however often the form is
sent, is 403 for a viewer and 404 for another organization's record."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEvent
from checkout.models import DiscountCode, PaymentLink, PaymentLinkItem
from merchant.models import Customer, Product
from tests.dashboard.conftest import make_member, signed_in
from tests.factories import (
    CustomerFactory,
    DiscountCodeFactory,
    LinkVisitFactory,
    OrganizationFactory,
    PaymentLinkFactory,
    PaymentLinkItemFactory,
    PlatformCheckoutSessionFactory,
    ProductFactory,
    TransactionFactory,
    WebhookEndpointFactory,
)
from tests.orders.conftest import RECIPIENT, USDC_BASE
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

PAY_TO = f"8453:{USDC_BASE}"
PAYER = "0x2222222222222222222222222222222222222222"


def _token(page: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)


def _error(page: str, field: str) -> str:
    found = re.search(rf'id="{field}-error"><li>([^<]*)<', page)
    return found.group(1) if found else ""


@pytest.fixture
def admin(organization):
    return make_member(organization, "admin@shop.example", "admin")


@pytest.fixture
def other():
    return OrganizationFactory(slug="other")


# --- payment links ------------------------------------------------------------------------------


def test_an_admin_edits_a_link_and_a_refused_edit_changes_nothing(organization, admin, tokens):
    link = PaymentLinkFactory(organization=organization, name="Poster", amount=4_000_000)
    browser = signed_in(admin)
    form = browser.get(f"/dashboard/links/{link.id}/edit").content.decode()
    assert 'value="Poster"' in form and 'value="4"' in form  # the price in USDC, not in units
    edit = {"name": "Big poster", "pay_to": PAY_TO, "amount": "9.99", "recipient_address": RECIPIENT}
    saved = browser.post(f"/dashboard/links/{link.id}/edit", edit)
    assert saved.status_code == 302 and saved["Location"] == f"/dashboard/links/{link.id}"
    link.refresh_from_db()
    assert (link.name, link.amount) == ("Big poster", 9_990_000)
    assert AuditEvent.objects.get(event_type="payment_link.updated").actor == f"member:{admin.id}"

    refused = browser.post(
        f"/dashboard/links/{link.id}/edit",
        edit | {"name": "", "amount": "1.0000001", "return_url": "javascript:alert(1)", "max_uses": "-3"},
    )
    page = refused.content.decode()
    assert refused.status_code == 400
    assert _error(page, "amount") == "At most 6 decimals for USDC."
    assert _error(page, "name") and _error(page, "return_url") and _error(page, "max_uses")
    link.refresh_from_db()
    assert (link.name, link.amount, link.return_url) == ("Big poster", 9_990_000, "")

    emptied = browser.post(f"/dashboard/links/{link.id}/edit", edit | {"amount": ""})
    assert emptied.status_code == 302
    link.refresh_from_db()
    assert link.amount is None  # an emptied price: the payer chooses


def test_items_are_added_once_and_removed_and_their_price_is_in_the_links_token(organization, admin, tokens):
    link = PaymentLinkFactory(organization=organization)
    browser = signed_in(admin)
    token = _token(browser.get(f"/dashboard/links/{link.id}").content.decode())
    item = {"form_token": token, "name": "Frame", "amount": "2.5", "quantity": "2"}
    first = browser.post(f"/dashboard/links/{link.id}/items", item)
    second = browser.post(f"/dashboard/links/{link.id}/items", item)  # a double click
    assert first.status_code == second.status_code == 302
    added = PaymentLinkItem.objects.get(payment_link=link)
    assert (added.name, added.amount, added.quantity) == ("Frame", 2_500_000, 2)
    page = browser.get(f"/dashboard/links/{link.id}").content.decode()
    assert "Frame" in page and ">2.5<" in page

    refused = browser.post(
        f"/dashboard/links/{link.id}/items", {"name": "", "amount": "abc", "quantity": "0"}
    )
    page = refused.content.decode()
    assert refused.status_code == 400 and _error(page, "name") and _error(page, "quantity")
    assert _error(page, "amount").startswith("Enter an amount")
    assert PaymentLinkItem.objects.filter(payment_link=link).count() == 1

    theirs = PaymentLinkItemFactory(
        payment_link=PaymentLinkFactory(organization=OrganizationFactory(slug="x"))
    )
    assert browser.post(f"/dashboard/links/{link.id}/items/{theirs.id}/remove").status_code == 404
    assert browser.post(f"/dashboard/links/{link.id}/items/{added.id}/remove").status_code == 302
    assert not PaymentLinkItem.objects.filter(payment_link=link).exists()
    assert PaymentLinkItem.objects.filter(pk=theirs.pk).exists()


def test_a_links_page_charts_its_views_and_opens_its_checkouts(organization, tokens, other):
    link = PaymentLinkFactory(organization=organization)
    for _ in range(3):
        LinkVisitFactory(payment_link=link)
    paid = "0x" + "ef" * 32  # the payer's transfer, on the chain they paid from (Arbitrum), not Base
    session = PlatformCheckoutSessionFactory(
        payment_link=link, customer_email="ada@example.com", tx_hash=paid
    )
    txn = TransactionFactory(
        organization=organization,
        session=session,
        payment_link=link,
        from_address=PAYER,
        source_chain_id=42161,
        tx_hash=paid,
    )
    browser = signed_in(make_member(organization))
    page = browser.get(f"/dashboard/links/{link.id}").content.decode()
    assert page.count("<rect ") == 30 and ": 3 views</title>" in page  # a bar a day, today's three views
    assert f'href="/dashboard/checkouts/{session.id}"' in page
    checkout = browser.get(f"/dashboard/checkouts/{session.id}").content.decode()
    assert "ada@example.com" in checkout and "4 USDC" in checkout and "/dashboard/payments/txn_" in checkout
    assert f"/tx/{paid}" in checkout and f"basescan.org/tx/{paid}" not in checkout
    payment = browser.get(f"/dashboard/payments/{txn.id}")
    assert f'href="/dashboard/checkouts/{session.id}"' in payment.content.decode()  # and back
    assert f'href="/dashboard/links/{link.id}"' in payment.content.decode()
    theirs = PlatformCheckoutSessionFactory(payment_link=PaymentLinkFactory(organization=other))
    assert browser.get(f"/dashboard/checkouts/{theirs.id}").status_code == 404


def test_a_viewer_cannot_edit_a_link_nor_its_items_and_others_links_are_not_found(
    organization, tokens, other
):
    link = PaymentLinkFactory(organization=organization, name="Poster")
    item = PaymentLinkItemFactory(payment_link=link)
    viewer = signed_in(make_member(organization))
    assert "Edit the link" not in viewer.get(f"/dashboard/links/{link.id}").content.decode()
    edit = {"name": "Hacked", "pay_to": PAY_TO, "amount": "1", "recipient_address": RECIPIENT}
    assert viewer.post(f"/dashboard/links/{link.id}/edit", edit).status_code == 403
    assert viewer.post(f"/dashboard/links/{link.id}/items", {"name": "x", "amount": "1"}).status_code == 403
    assert viewer.post(f"/dashboard/links/{link.id}/items/{item.id}/remove").status_code == 403
    theirs = PaymentLinkFactory(organization=other, name="Theirs")
    admin = signed_in(make_member(organization, "admin@shop.example", "admin"))
    assert admin.get(f"/dashboard/links/{theirs.id}/edit").status_code == 404
    assert admin.post(f"/dashboard/links/{theirs.id}/edit", edit).status_code == 404
    link.refresh_from_db()
    theirs.refresh_from_db()
    assert (link.name, theirs.name) == ("Poster", "Theirs") and PaymentLinkItem.objects.count() == 1


# --- products -----------------------------------------------------------------------------------


def test_an_admin_creates_edits_archives_a_product_and_makes_a_link_of_it(organization, admin, tokens):
    browser = signed_in(admin)
    token = _token(browser.get("/dashboard/products/new/").content.decode())
    form = {
        "form_token": token,
        "name": "Mug",
        "product_type": "one_time",
        "pay_to": PAY_TO,
        "amount": "12",
        "recipient_address": RECIPIENT,
    }
    first = browser.post("/dashboard/products/new/", form)
    second = browser.post("/dashboard/products/new/", form)
    product = Product.objects.get()
    assert first["Location"] == second["Location"] == f"/dashboard/products/{product.id}"
    assert (product.amount, product.chain_id) == (12_000_000, 8453)
    assert AuditEvent.objects.get(event_type="product.created").actor == f"member:{admin.id}"

    refused = browser.post(
        f"/dashboard/products/{product.id}", form | {"name": "", "amount": "", "image_url": "ftp://x"}
    )
    page = refused.content.decode()
    assert refused.status_code == 400 and _error(page, "name") and _error(page, "image_url")
    product.refresh_from_db()
    assert (product.name, product.amount) == ("Mug", 12_000_000)
    variable = browser.post(
        f"/dashboard/products/{product.id}", form | {"product_type": "variable", "amount": ""}
    )
    assert variable.status_code == 302
    product.refresh_from_db()
    assert (product.product_type, product.amount) == ("variable", None)

    link_token = _token(browser.get(f"/dashboard/products/{product.id}").content.decode())
    made = browser.post(f"/dashboard/products/{product.id}/link", {"form_token": link_token})
    again = browser.post(f"/dashboard/products/{product.id}/link", {"form_token": link_token})
    link = PaymentLink.objects.get()
    assert made["Location"] == again["Location"] == f"/dashboard/links/{link.id}" and link.name == "Mug"
    assert browser.post(f"/dashboard/products/{product.id}/archive").status_code == 302
    product.refresh_from_db()
    assert product.is_active is False
    assert f"/dashboard/products/{product.id}" not in browser.get("/dashboard/products/").content.decode()
    archived = browser.get("/dashboard/products/", {"archived": "1", "q": "Mug"}).content.decode()
    assert f"/dashboard/products/{product.id}" in archived and "archived</span>" in archived


def test_products_refuse_viewers_and_other_organizations(organization, tokens, other):
    mine = ProductFactory(organization=organization, name="Mug")
    theirs = ProductFactory(organization=other, name="Theirs")
    viewer = signed_in(make_member(organization))
    page = viewer.get(f"/dashboard/products/{mine.id}").content.decode()
    assert 'value="Mug"' in page and "Save the product" not in page and "New product" not in page
    assert viewer.post(f"/dashboard/products/{mine.id}", {"name": "x"}).status_code == 403
    assert viewer.post(f"/dashboard/products/{mine.id}/archive").status_code == 403
    assert viewer.post("/dashboard/products/new/", {"name": "x"}).status_code == 403
    admin = signed_in(make_member(organization, "admin@shop.example", "admin"))
    for path in (f"/dashboard/products/{theirs.id}", f"/dashboard/products/{theirs.id}/archive"):
        assert admin.post(path, {"name": "x"}).status_code == 404
    assert admin.get(f"/dashboard/products/{theirs.id}").status_code == 404
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.is_active and theirs.is_active and Product.objects.count() == 2


# --- discount codes -----------------------------------------------------------------------------


def test_an_admin_makes_percentage_and_fixed_codes_and_errors_stay_beside_their_fields(
    organization, admin, tokens
):
    link = PaymentLinkFactory(organization=organization)
    browser = signed_in(admin)
    token = _token(browser.get("/dashboard/discount-codes/new/").content.decode())
    percent = {"form_token": token, "code": "spring10", "type": "percentage", "value": "10"}
    first = browser.post("/dashboard/discount-codes/new/", percent)
    second = browser.post("/dashboard/discount-codes/new/", percent)
    code = DiscountCode.objects.get()
    assert first["Location"] == second["Location"] == f"/dashboard/discount-codes/{code.id}"
    assert (code.code, code.value) == ("SPRING10", 10)

    fixed = {"code": "FIVE", "type": "fixed", "value": "5.5", "payment_link_id": link.id, "max_uses": "3"}
    made = browser.post("/dashboard/discount-codes/new/", fixed | {"expires_at": "2099-01-01T00:00"})
    assert made.status_code == 302
    five = DiscountCode.objects.get(code="FIVE")
    assert (five.value, five.payment_link_id, five.max_uses) == (5_500_000, link.id, 3)
    assert five.expires_at.year == 2099
    assert "5.5 USDC" in browser.get("/dashboard/discount-codes/").content.decode()

    refused = browser.post(
        "/dashboard/discount-codes/new/",
        {"code": "SUMMER", "type": "percentage", "value": "0", "expires_at": "next week"},
    )
    page = refused.content.decode()
    assert refused.status_code == 400 and _error(page, "expires_at") and _error(page, "value")
    too_much = browser.post(
        "/dashboard/discount-codes/new/", {"code": "SUMMER", "type": "percentage", "value": "150"}
    )
    assert too_much.status_code == 400 and "between 1 and 100" in _error(too_much.content.decode(), "value")
    duplicate = browser.post("/dashboard/discount-codes/new/", percent | {"form_token": ""})
    assert duplicate.status_code == 400 and "already exists" in _error(duplicate.content.decode(), "code")
    assert DiscountCode.objects.count() == 2

    edited = browser.post(
        f"/dashboard/discount-codes/{code.id}", {"code": "SPRING15", "type": "percentage", "value": "15"}
    )
    assert edited.status_code == 302
    code.refresh_from_db()
    assert (code.code, code.value) == ("SPRING15", 15)
    assert AuditEvent.objects.filter(event_type="discount_code.updated", actor=f"member:{admin.id}").exists()
    browser.post(f"/dashboard/discount-codes/{code.id}/active", {"active": "false"})
    code.refresh_from_db()
    assert code.is_active is False
    assert browser.post(f"/dashboard/discount-codes/{code.id}/delete").status_code == 302
    code.refresh_from_db()
    assert code.deleted_at is not None
    assert browser.get(f"/dashboard/discount-codes/{code.id}").status_code == 404


def test_discount_codes_refuse_viewers_and_other_organizations(organization, tokens, other):
    mine = DiscountCodeFactory(organization=organization, code="MINE")
    theirs = DiscountCodeFactory(organization=other, code="THEIRS")
    viewer = signed_in(make_member(organization))
    assert viewer.get(f"/dashboard/discount-codes/{mine.id}").status_code == 200
    assert viewer.post(f"/dashboard/discount-codes/{mine.id}/delete").status_code == 403
    assert (
        viewer.post(
            f"/dashboard/discount-codes/{mine.id}", {"code": "X", "type": "percentage", "value": "1"}
        ).status_code
        == 403
    )
    admin = signed_in(make_member(organization, "admin@shop.example", "admin"))
    assert admin.get(f"/dashboard/discount-codes/{theirs.id}").status_code == 404
    assert admin.post(f"/dashboard/discount-codes/{theirs.id}/delete").status_code == 404
    # a code cannot be tied to another organization's link
    their_link = PaymentLinkFactory(organization=other)
    refused = admin.post(
        "/dashboard/discount-codes/new/",
        {"code": "SNEAKY", "type": "percentage", "value": "5", "payment_link_id": their_link.id},
    )
    assert refused.status_code == 400 and _error(refused.content.decode(), "payment_link_id")
    assert DiscountCode.objects.filter(deleted_at__isnull=True).count() == 2


# --- customers ----------------------------------------------------------------------------------


def test_an_admin_adds_edits_and_erases_a_customer_and_sees_their_payments(organization, admin, tokens):
    browser = signed_in(admin)
    token = _token(browser.get("/dashboard/customers/new/").content.decode())
    form = {"form_token": token, "wallet_address": PAYER, "name": "Ada", "email": "ada@example.com"}
    first = browser.post("/dashboard/customers/new/", form)
    second = browser.post("/dashboard/customers/new/", form)
    customer = Customer.objects.get()
    assert first["Location"] == second["Location"] == f"/dashboard/customers/{customer.id}"
    assert AuditEvent.objects.get(event_type="customer.created").actor == f"member:{admin.id}"
    again = browser.post("/dashboard/customers/new/", form | {"form_token": ""})
    assert again.status_code == 400 and "already exists" in _error(again.content.decode(), "wallet_address")

    TransactionFactory(organization=organization, customer=customer, from_address=PAYER, amount=7_000_000)
    page = browser.get(f"/dashboard/customers/{customer.id}").content.decode()
    assert "7 USDC" in page and 'value="ada@example.com"' in page
    refused = browser.post(f"/dashboard/customers/{customer.id}", {"name": "Ada", "email": "not an email"})
    assert refused.status_code == 400 and _error(refused.content.decode(), "email")
    customer.refresh_from_db()
    assert customer.email == "ada@example.com"
    assert (
        browser.post(f"/dashboard/customers/{customer.id}", {"name": "Ada L.", "email": ""}).status_code
        == 302
    )
    customer.refresh_from_db()
    assert (customer.name, customer.email) == ("Ada L.", "")

    assert browser.post(f"/dashboard/customers/{customer.id}/erase").status_code == 302  # not confirmed
    customer.refresh_from_db()
    assert customer.erased_at is None and customer.name == "Ada L."
    assert browser.post(f"/dashboard/customers/{customer.id}/erase", {"confirm": "yes"}).status_code == 302
    customer.refresh_from_db()
    assert customer.erased_at is not None and customer.name == ""
    assert AuditEvent.objects.get(event_type="customer.deleted").actor == f"member:{admin.id}"


def test_customers_refuse_viewers_developers_erasing_and_other_organizations(organization, tokens, other):
    mine = CustomerFactory(organization=organization, name="Ada")
    theirs = CustomerFactory(organization=other, name="Grace")
    viewer = signed_in(make_member(organization))
    assert viewer.post(f"/dashboard/customers/{mine.id}", {"name": "x"}).status_code == 403
    developer = signed_in(make_member(organization, "dev@shop.example", "developer"))
    assert developer.post(f"/dashboard/customers/{mine.id}/erase", {"confirm": "yes"}).status_code == 403
    admin = signed_in(make_member(organization, "admin@shop.example", "admin"))
    assert admin.get(f"/dashboard/customers/{theirs.id}").status_code == 404
    assert admin.post(f"/dashboard/customers/{theirs.id}/erase", {"confirm": "yes"}).status_code == 404
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.name, mine.erased_at, theirs.name, theirs.erased_at) == ("Ada", None, "Grace", None)


# --- webhook endpoints --------------------------------------------------------------------------


@pytest.fixture
def public_dns(monkeypatch):
    """hooks.shop.example resolves to a public address (tests never use real DNS)."""
    import socket

    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        if host == "hooks.shop.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def test_a_developer_adds_an_endpoint_sees_its_secret_once_edits_and_deletes_it(
    organization, settings, public_dns
):
    settings.WEBHOOK_ALLOW_LOCALHOST = False
    developer = make_member(organization, "dev@shop.example", "developer")
    browser = signed_in(developer)
    token = _token(browser.get("/dashboard/webhooks/new/").content.decode())
    form = {"form_token": token, "url": "https://hooks.shop.example/in", "events": ["payment.completed"]}
    first = browser.post("/dashboard/webhooks/new/", form)
    second = browser.post("/dashboard/webhooks/new/", form)
    endpoint = WebhookEndpoint.objects.get()
    assert first["Location"] == second["Location"] == f"/dashboard/webhooks/{endpoint.id}"
    assert endpoint.events == ["payment.completed"]
    shown = browser.get(first["Location"]).content.decode()
    assert re.search(r'id="new-secret">whsec_\w+<', shown)
    assert "whsec_" not in browser.get(first["Location"]).content.decode()  # once
    assert AuditEvent.objects.get(event_type="webhook.created").actor == f"member:{developer.id}"

    refused = browser.post("/dashboard/webhooks/new/", {"url": "http://127.0.0.1:8000/in"})
    page = refused.content.decode()
    assert refused.status_code == 400 and _error(page, "url") and _error(page, "every_event")
    assert WebhookEndpoint.objects.count() == 1

    edited = browser.post(
        f"/dashboard/webhooks/{endpoint.id}/edit",
        {"url": "https://hooks.shop.example/v2", "every_event": "on"},
    )
    assert edited.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.events) == ("https://hooks.shop.example/v2", ["*"])
    assert browser.post(f"/dashboard/webhooks/{endpoint.id}/delete").status_code == 302  # not confirmed
    assert WebhookEndpoint.objects.exists()
    assert browser.post(f"/dashboard/webhooks/{endpoint.id}/delete", {"confirm": "yes"}).status_code == 302
    assert not WebhookEndpoint.objects.exists()


def test_webhook_endpoints_refuse_viewers_and_other_organizations(organization, other):
    mine = WebhookEndpointFactory(organization=organization, events=["*"])
    theirs = WebhookEndpointFactory(organization=other, events=["*"])
    viewer = signed_in(make_member(organization))
    assert "New endpoint" not in viewer.get("/dashboard/webhooks/").content.decode()
    assert (
        viewer.post("/dashboard/webhooks/new/", {"url": "https://a.example", "every_event": "on"}).status_code
        == 403
    )
    assert viewer.post(f"/dashboard/webhooks/{mine.id}/delete", {"confirm": "yes"}).status_code == 403
    developer = signed_in(make_member(organization, "dev@shop.example", "developer"))
    assert developer.get(f"/dashboard/webhooks/{theirs.id}/edit").status_code == 404
    assert developer.post(f"/dashboard/webhooks/{theirs.id}/delete", {"confirm": "yes"}).status_code == 404
    assert WebhookEndpoint.objects.count() == 2
