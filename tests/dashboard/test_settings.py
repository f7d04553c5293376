"""Settings: branding and notifications, validated as the API validates them, admins only."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from audit.models import AuditEvent
from merchant.models import OrganizationLogo
from platform_api.models import Organization
from tests.dashboard.conftest import make_member, signed_in
from webhooks.models import NotificationSettings

pytestmark = pytest.mark.django_db


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 40), (10, 110, 80)).save(out, format="PNG")
    return out.getvalue()


def test_an_admin_sets_the_branding_payers_see(organization, tokens):
    admin = make_member(organization, "admin@shop.example", "admin")
    browser = signed_in(admin)
    saved = browser.post(
        "/dashboard/settings/",
        {
            "section": "branding",
            "name": "Poster Shop",
            "brand_color": "#0b6e4f",
            "support_email": "help@shop.example",
            "support_url": "https://shop.example/help",
            "website_url": "",
            "logo": SimpleUploadedFile("logo.png", _png(), content_type="image/png"),
        },
    )
    assert saved.status_code == 302
    organization.refresh_from_db()
    assert (organization.name, organization.brand_color) == ("Poster Shop", "#0b6e4f")
    assert OrganizationLogo.objects.get().digest == organization.logo_digest
    assert AuditEvent.objects.filter(event_type="organization.updated", actor=f"member:{admin.id}").exists()


def test_bad_branding_is_said_beside_each_field_and_nothing_changes(organization):
    browser = signed_in(make_member(organization, "admin@shop.example", "admin"))
    refused = browser.post(
        "/dashboard/settings/",
        {
            "section": "branding",
            "name": "Acme\u202e",
            "brand_color": "red",
            "support_email": "nope",
            "support_url": "javascript:alert(1)",
            "website_url": "",
            "logo": SimpleUploadedFile("logo.svg", b"<svg/>", content_type="image/svg+xml"),
        },
    )
    page = refused.content.decode()
    assert refused.status_code == 400
    for field in (
        "name-error",
        "brand_color-error",
        "support_email-error",
        "support_url-error",
        "logo-error",
    ):
        assert f'id="{field}"' in page, field
    organization.refresh_from_db()
    assert (
        organization.name == "Acme" and not organization.brand_color and not OrganizationLogo.objects.exists()
    )


def test_notifications_need_an_address_to_be_enabled(organization):
    browser = signed_in(make_member(organization, "admin@shop.example", "admin"))
    refused = browser.post(
        "/dashboard/settings/", {"section": "notifications", "email_enabled": "on", "email_address": ""}
    )
    assert refused.status_code == 400 and 'id="email_address-error"' in refused.content.decode()
    ok = browser.post(
        "/dashboard/settings/",
        {
            "section": "notifications",
            "email_enabled": "on",
            "email_address": "ops@shop.example",
            "enabled_events": ["payment.completed", "bogus"],
        },
    )
    assert ok.status_code == 302
    row = NotificationSettings.objects.get(organization=organization)
    assert row.email_enabled and row.enabled_events == ["payment.completed"]


def test_developers_and_viewers_cannot_see_or_change_settings(organization):
    for role in ("developer", "viewer"):
        browser = signed_in(make_member(organization, f"{role}@shop.example", role))
        assert browser.get("/dashboard/settings/").status_code == 403
        assert (
            browser.post("/dashboard/settings/", {"section": "branding", "name": "Hijacked"}).status_code
            == 403
        )
    assert Organization.objects.get(pk=organization.pk).name == "Acme"


from tests.orders.conftest import USDC_BASE  # noqa: E402

BASE_USDC = f"8453:{USDC_BASE}"
NEW_RECIPIENT = "0x" + "ab" * 20


def _payouts(browser, **fields):
    form = {"section": "payouts", "pay_to": "", "recipient_address": "", "redirect_domains": ""} | fields
    return browser.post("/dashboard/settings/", form)


@pytest.fixture
def owners(organization):
    from tests.dashboard.conftest import make_member

    first = make_member(organization, "owner@shop.example", "owner", device=True)
    make_member(organization, "cofounder@shop.example", "owner", device=True)
    return first


def test_changing_where_money_goes_needs_the_current_code_and_emails_every_owner(
    organization, owners, tokens
):
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from tests.dashboard.conftest import code_for
    from webhooks.models import NotificationEmail

    browser = signed_in(owners)
    page = browser.get("/dashboard/settings/").content.decode()
    assert 'id="payouts-heading"' in page and 'name="code"' in page

    for code in ("", "000000"):
        refused = _payouts(browser, pay_to=BASE_USDC, recipient_address=NEW_RECIPIENT, code=code)
        assert refused.status_code == 400 and 'id="code-error"' in refused.content.decode()
    organization.refresh_from_db()
    assert organization.default_recipient_address in ("", None)
    assert not NotificationEmail.objects.filter(event_type="organization.payouts_changed").exists()

    device = TOTPDevice.objects.get(user=owners.user)
    TOTPDevice.objects.filter(pk=device.pk).update(last_t=-1, throttling_failure_timestamp=None)
    device.refresh_from_db()
    done = _payouts(
        browser,
        pay_to=BASE_USDC,
        recipient_address=NEW_RECIPIENT,
        redirect_domains="shop.example\nShop.Example\nexample.org",
        code=code_for(device),
    )
    assert done.status_code == 302
    organization.refresh_from_db()
    assert organization.default_recipient_address.lower() == NEW_RECIPIENT
    assert (organization.default_chain_id, organization.redirect_domains) == (
        8453,
        ["shop.example", "example.org"],
    )
    told = NotificationEmail.objects.filter(event_type="organization.payouts_changed")
    assert sorted(e.to_address for e in told) == ["cofounder@shop.example", "owner@shop.example"]
    assert all(NEW_RECIPIENT in e.body.lower() and "USDC on Base" in e.body for e in told)
    assert "owner@shop.example in the dashboard" in told.first().body
    assert AuditEvent.objects.filter(event_type="organization.updated", actor=f"member:{owners.id}").exists()

    # Where payers are sent back to is not where money goes: no code asked, no email.
    again = _payouts(
        browser, pay_to=BASE_USDC, recipient_address=NEW_RECIPIENT, redirect_domains="shop.example"
    )
    assert again.status_code == 302 and told.count() == 2


def test_an_admin_without_an_authenticator_cannot_move_payouts(organization, tokens):
    admin = make_member(organization, "admin@shop.example", "admin")
    refused = _payouts(signed_in(admin), pay_to=BASE_USDC, recipient_address=NEW_RECIPIENT)
    assert refused.status_code == 400 and "Turn on two-factor sign-in first" in refused.content.decode()
    organization.refresh_from_db()
    assert not organization.default_recipient_address


def test_a_payout_change_through_the_api_emails_the_owners_too(organization, owners, admin_client):
    from webhooks.models import NotificationEmail

    response = admin_client.patch(
        "/api/v1/organization", {"default_recipient_address": NEW_RECIPIENT}, format="json"
    )
    assert response.status_code == 200
    told = NotificationEmail.objects.filter(event_type="organization.payouts_changed")
    assert told.count() == 2 and "the API key ak_" in told.first().body


def test_the_fee_schedule_in_force_is_shown(organization, settings):
    settings.FEE_TIERS_USD = [(25, 150), (1_000, 90)]
    settings.FEE_TOP_TIER_BPS = 30
    admin = make_member(organization, "admin@shop.example", "admin")
    page = signed_in(admin).get("/dashboard/settings/").content.decode()
    fees = page[page.index('id="fees"') :]
    assert "under $25" in fees and "1.50 %" in fees and "$1,000 and more" in fees and "0.30 %" in fees
    assert "5.40 % + $0.30" in fees
