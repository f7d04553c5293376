"""Every page is served under a strict Content-Security-Policy: nothing from another origin, no inline
script or style but the page's own, carrying the request's nonce. Checked in the headers, and in Chromium:
each page renders and works with no CSP violation and no request to another origin."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.conftest import admin_sign_in
from tests.orders.conftest import RECIPIENT, USDC_BASE

pytestmark = pytest.mark.django_db(transaction=True)


def directives(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


@pytest.fixture
def pages(admin_client, organization, tokens):
    link = admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Poster",
            "amount": "4000000",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
        },
        format="json",
    ).json()
    session = admin_client.post(
        "/api/v1/checkout-sessions", {"payment_link_id": link["id"]}, format="json"
    ).json()
    widget = admin_client.post(
        "/api/v1/widgets",
        {
            "name": "Tip",
            "widget_type": "checkout",
            "config": {
                "recipient_address": RECIPIENT,
                "destination_token": USDC_BASE,
                "destination_chain_id": 8453,
                "amount": "1000000",
            },
        },
        format="json",
    ).json()
    return {
        "link": f"/pay/{link['short_code']}",
        "session": f"/pay/s/{session['id']}",
        "widget": f"/widgets/{widget['short_code']}",
    }


def test_every_page_and_answer_carries_the_policy_and_inline_code_carries_its_nonce(pages, staff):
    client = Client()
    for path in (
        pages["link"],
        pages["session"],
        "/api/docs/",
        "/admin/login/",
        "/orders?creatorAddress=0x" + "1" * 40,
        "/api/v1/api-keys",
        "/no/such/page",
    ):
        response = staff.get(path) if path.startswith("/admin") else client.get(path)
        policy = directives(response)
        assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"], path
        assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'none'"], path
        assert "'unsafe-inline'" not in policy["script-src"] + policy["style-src"], path
        body = response.content.decode()
        inline = re.findall(r"<(script|style)(?![^>]*\bsrc=)([^>]*)>", body)
        nonce = next((v[7:-1] for v in policy["script-src"] if v.startswith("'nonce-")), None)
        for tag, attributes in inline:
            assert nonce and f'nonce="{nonce}"' in attributes, f"{path}: an inline <{tag}> without the nonce"
    widget = client.get(pages["widget"])
    assert "frame-ancestors" not in directives(widget)  # the one page other sites may frame
    assert "'unsafe-inline'" not in directives(widget)["script-src"]


def test_pages_work_in_chromium_with_no_violation_and_nothing_from_another_origin(
    pages, live_server, browser_page, admin_user
):
    page = browser_page
    violations, foreign = [], []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on(
        "request",
        lambda r: foreign.append(r.url) if not r.url.startswith((live_server.url, "data:")) else None,
    )

    page.goto(f"{live_server.url}{pages['link']}")
    assert page.get_by_role("heading", name="Poster").is_visible()
    page.goto(f"{live_server.url}{pages['session']}")
    assert page.get_by_role("heading", name="Poster").is_visible()
    page.goto(f"{live_server.url}{pages['widget']}")
    assert page.get_by_role("button").first.is_visible()
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)  # Swagger UI ran: the operations are listed
    admin_sign_in(page, live_server.url, admin_user)
    page.wait_for_url(f"{live_server.url}/admin/")
    page.goto(f"{live_server.url}/admin/orders/order/")
    assert page.locator("#changelist").is_visible()

    assert violations == []
    assert foreign == []


def test_the_favicon_is_served_from_the_service_itself(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    icon = b"".join(response.streaming_content) if response.streaming else response.content
    assert icon[:4] == b"\x00\x00\x01\x00" and b"PNG" in icon[:40]  # an icon directory holding a PNG
