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
