"""The organization's branding: set through the API and the admin, checked, and shown on the payer's page."""

from __future__ import annotations

import base64
import io
import os

import pytest
from PIL import Image

from audit.models import AuditEvent
from merchant.models import OrganizationLogo
from platform_api.models import Organization

pytestmark = pytest.mark.django_db


def image(kind: str = "PNG", size=(64, 32), color=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format=kind)
    return out.getvalue()


def upload(client, raw: bytes):
    return client.put("/api/v1/organization/logo", {"image": base64.b64encode(raw).decode()}, format="json")


def _link(admin_client, **extra) -> dict:
    from tests.orders.conftest import RECIPIENT, USDC_BASE

    response = admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Poster",
            "amount": "1000000",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
            **extra,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.parametrize("kind", ["PNG", "JPEG", "WEBP", "GIF"])
def test_a_logo_is_kept_as_a_png_the_service_wrote_and_served_from_this_origin(admin_client, client, kind):
    response = upload(admin_client, image(kind, size=(1200, 600)))
    assert response.status_code == 200, response.content
    url = response.json()["url"]
    assert url.startswith("/pay/logo/") and url.endswith(".png")
    assert admin_client.get("/api/v1/organization").json()["logo"] == url

    served = client.get(url)
    assert served.status_code == 200 and served["Content-Type"] == "image/png"
    assert served["Cache-Control"] == "public, max-age=31536000, immutable"
    assert served["Content-Security-Policy"] == "default-src 'none'"
    picture = Image.open(io.BytesIO(served.content))
    assert picture.format == "PNG" and picture.size == (512, 256)  # scaled down, proportions kept
    assert AuditEvent.objects.filter(event_type="organization.logo_updated").count() == 1


def test_what_is_not_a_small_raster_image_is_refused_and_nothing_changes(admin_client):
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    huge_canvas = image("PNG", size=(5000, 10), color=(0, 0, 0))
    bmp = io.BytesIO()
    Image.new("RGB", (8, 8)).save(bmp, format="BMP")
    noise = io.BytesIO()  # random pixels do not compress: a PNG above the limit
    Image.frombytes("RGB", (430, 430), os.urandom(430 * 430 * 3)).save(noise, format="PNG")
    assert 512 * 1024 < len(noise.getvalue()) < 700 * 1024
    cases = {
        "not base64": {"image": "%%%"},
        "svg": {"image": base64.b64encode(svg).decode()},
        "bmp": {"image": base64.b64encode(bmp.getvalue()).decode()},
        "too large": {"image": base64.b64encode(noise.getvalue()).decode()},
        "too many pixels": {"image": base64.b64encode(huge_canvas).decode()},
        "truncated": {"image": base64.b64encode(image()[:60]).decode()},
        "empty": {"image": ""},
    }
    for name, body in cases.items():
        response = admin_client.put("/api/v1/organization/logo", body, format="json")
        assert response.status_code == 400, name
        error = response.json()["error"]
        assert error["param"] == "image" and error["type"] == "invalid_request_error", name
    assert not OrganizationLogo.objects.exists()
    assert admin_client.get("/api/v1/organization").json()["logo"] is None


def test_a_logo_is_replaced_and_removed_and_only_an_admin_key_may(admin_client, client, organization):
    from tests.conftest import client_for
    from tests.factories import make_api_key

    _, raw = make_api_key(organization, permissions=["write"], name="writer")
    assert upload(client_for(raw), image()).status_code == 403
    first = upload(admin_client, image(color=(1, 2, 3))).json()["url"]
    second = upload(admin_client, image(color=(3, 2, 1))).json()["url"]
    assert first != second and client.get(first).status_code == 404 and client.get(second).status_code == 200
    assert admin_client.delete("/api/v1/organization/logo").json()["url"] is None
    assert client.get(second).status_code == 404 and not OrganizationLogo.objects.exists()


def test_branding_fields_are_validated(admin_client):
    refused = {
        "support_url": "javascript:alert(1)",
        "website_url": "ftp://shop.example/",
        "brand_color": "red; background:url(x)",
        "support_email": "not an email",
        "name": "Acme\u202egnp.exe",  # a right-to-left override would reorder what the payer reads
    }
    for field, value in refused.items():
        response = admin_client.patch("/api/v1/organization", {field: value}, format="json")
        assert response.status_code == 400, field
        assert response.json()["error"]["param"] == field
    assert Organization.objects.get().name == "Acme"  # the factory's; nothing was written
    ok = admin_client.patch(
        "/api/v1/organization",
        {
            "brand_color": "#0b6e4f",
            "support_email": "help@shop.example",
            "support_url": "https://shop.example/help",
        },
        format="json",
    )
    assert ok.status_code == 200
    assert ok.json()["brand_color"] == "#0b6e4f" and ok.json()["support_url"] == "https://shop.example/help"


def test_a_link_refuses_a_javascript_return_url(admin_client, tokens):
    from tests.orders.conftest import RECIPIENT, USDC_BASE

    for field, value in {"return_url": "javascript:alert(1)", "image_url": "data:text/html,hi"}.items():
        response = admin_client.post(
            "/api/v1/payment-links",
            {
                "name": "Poster",
                "amount": "1",
                "token_address": USDC_BASE,
                "chain_id": 8453,
                "recipient_address": RECIPIENT,
                field: value,
            },
            format="json",
        )
        assert response.status_code == 400 and response.json()["error"]["param"] == field


def test_the_payer_page_shows_the_merchant_and_hostile_text_stays_text(admin_client, client, tokens):
    admin_client.patch(
        "/api/v1/organization",
        {
            "name": '<script>alert("name")</script>',
            "brand_color": "#0b6e4f",
            "support_email": "help@shop.example",
            "support_url": "https://shop.example/help?a=1&b=<2>",
        },
        format="json",
    )
    logo = upload(admin_client, image()).json()["url"]
    link = _link(
        admin_client,
        description='"><img src=x onerror=alert(1)>',
        items=[{"name": "</td></tr></table><script>alert(2)</script>", "amount": "1000000"}],
        button_text="Pay <b>now</b>",
        form_schema={"fields": [{"id": "note", "type": "text", "label": "<svg onload=alert(3)>"}]},
    )
    page = client.get(f"/pay/{link['short_code']}").content.decode()
    assert f'<img src="{logo}" alt="">' in page
    assert "&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "onerror=alert" not in page.replace("onerror=alert(1)&gt;", "")  # only as escaped text
    assert "&lt;svg onload=alert(3)&gt;" in page and "<svg onload" not in page
    assert "Pay &lt;b&gt;now&lt;/b&gt;" in page
    assert 'href="mailto:help@shop.example"' in page
    assert 'href="https://shop.example/help?a=1&amp;b=&lt;2&gt;"' in page
    assert "--accent: #0b6e4f" in page  # the organization's colour, where the link names none


def test_staff_upload_a_logo_in_the_admin_and_a_bad_file_is_said_beside_the_field(staff, organization):
    from django.core.files.uploadedfile import SimpleUploadedFile

    url = f"/admin/platform_api/organization/{organization.pk}/change/"
    form = {
        "slug": organization.slug,
        "name": organization.name,
        "redirect_domains": "[]",
        "api_keys-TOTAL_FORMS": "0",
        "api_keys-INITIAL_FORMS": "0",
    }
    bad = staff.post(url, {**form, "logo_file": SimpleUploadedFile("x.svg", b"<svg/>")})
    assert bad.status_code == 200 and "not a readable PNG, JPEG, WebP or GIF" in bad.content.decode()
    assert not OrganizationLogo.objects.exists()
    good = staff.post(
        url, {**form, "logo_file": SimpleUploadedFile("x.png", image()), "brand_color": "#112233"}
    )
    assert good.status_code == 302, [
        line for line in good.content.decode().splitlines() if "errorlist" in line or "errornote" in line
    ]
    organization.refresh_from_db()
    assert organization.logo_digest and organization.brand_color == "#112233"
    assert OrganizationLogo.objects.get().digest == organization.logo_digest
    assert AuditEvent.objects.get(event_type="organization.logo_updated").actor.startswith("staff:")
