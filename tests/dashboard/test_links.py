"""Payment links in the dashboard: created through the API's rules, errors beside their fields, one link per
form however often it is sent, viewers refused, other organizations' links not found."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEvent
from checkout.models import PaymentLink
from tests.dashboard.conftest import make_member, signed_in
from tests.factories import OrganizationFactory, PaymentLinkFactory
from tests.orders.conftest import RECIPIENT, USDC_BASE

pytestmark = pytest.mark.django_db


def _token(page: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)


def test_an_admin_creates_a_link_once_however_often_the_form_is_sent(organization, tokens):
    admin = make_member(organization, "admin@shop.example", "admin")
    browser = signed_in(admin)
    token = _token(browser.get("/dashboard/links/new/").content.decode())
    form = {
        "form_token": token,
        "name": "Poster",
        "amount": "12.5",
        "pay_to": f"8453:{USDC_BASE}",
        "recipient_address": RECIPIENT,
    }
    first = browser.post("/dashboard/links/new/", form)
    second = browser.post("/dashboard/links/new/", form)  # a double click
    link = PaymentLink.objects.get()
    assert first["Location"] == second["Location"] == f"/dashboard/links/{link.id}"
    assert link.amount == 12_500_000 and link.chain_id == 8453
    page = browser.get(first["Location"]).content.decode()
    assert f"/pay/{link.short_code}" in page and "<svg" in page and 'id="link-price">12.5 USDC<' in page
    event = AuditEvent.objects.get(event_type="payment_link.created")
    assert event.actor == f"member:{admin.id}"
    assert browser.post(f"/dashboard/links/{link.id}/active", {"active": "false"}).status_code == 302
    link.refresh_from_db()
    assert link.is_active is False
    duplicate_token = _token(browser.get(f"/dashboard/links/{link.id}").content.decode())
    copied = browser.post(f"/dashboard/links/{link.id}/duplicate", {"form_token": duplicate_token})
    again = browser.post(f"/dashboard/links/{link.id}/duplicate", {"form_token": duplicate_token})
    assert copied["Location"] == again["Location"] and PaymentLink.objects.count() == 2
    assert PaymentLink.objects.exclude(pk=link.pk).get().name == "Copy of Poster"


def test_each_error_is_said_beside_its_field_and_nothing_is_made(organization, tokens):
    browser = signed_in(make_member(organization, "admin@shop.example", "admin"))
    token = _token(browser.get("/dashboard/links/new/").content.decode())
    refused = browser.post(
        "/dashboard/links/new/",
        {
            "form_token": token,
            "name": "",
            "amount": "1.1234567",
            "pay_to": f"8453:{USDC_BASE}",
            "recipient_address": "0x12",
        },
    )
    page = refused.content.decode()
    assert refused.status_code == 400
    assert 'id="amount-error"><li>At most 6 decimals for USDC.' in page
    assert 'id="name-error"' in page and 'id="recipient_address-error"' in page
    assert not PaymentLink.objects.exists()


def test_a_viewer_reads_links_but_cannot_change_them(organization, tokens):
    link = PaymentLinkFactory(organization=organization)
    browser = signed_in(make_member(organization))
    listed = browser.get("/dashboard/links/").content.decode()
    assert link.name in listed and "New payment link" not in listed
    assert "Deactivate" not in browser.get(f"/dashboard/links/{link.id}").content.decode()
    assert browser.post(f"/dashboard/links/{link.id}/active", {"active": "false"}).status_code == 403
    assert browser.post("/dashboard/links/new/", {"name": "x"}).status_code == 403
    link.refresh_from_db()
    assert link.is_active is True and PaymentLink.objects.count() == 1


def test_another_organizations_link_is_not_found(organization, tokens):
    theirs = PaymentLinkFactory(organization=OrganizationFactory(slug="other"))
    browser = signed_in(make_member(organization, "admin@shop.example", "admin"))
    assert browser.get(f"/dashboard/links/{theirs.id}").status_code == 404
    assert browser.post(f"/dashboard/links/{theirs.id}/active", {"active": "false"}).status_code == 404
    assert theirs.name not in browser.get("/dashboard/links/").content.decode()
    theirs.refresh_from_db()
    assert theirs.is_active is True
