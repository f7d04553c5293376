"""Widgets: the API (config by type, theme, filters, stats) and the embeddable page (views, checkouts started)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from checkout.models import CheckoutSession, Widget, WidgetEvent
from checkout.visits import flush_views
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key
from tests.orders.conftest import RECIPIENT, USDC_ARB, USDC_BASE

pytestmark = pytest.mark.django_db

NFT = "0x2222222222222222222222222222222222222222"
CONFIGS = {
    "checkout": {
        "recipient_address": RECIPIENT,
        "destination_token": USDC_BASE,
        "destination_chain_id": 8453,
        "amount": "25000000",
    },
    "swap": {"src_token": USDC_BASE, "src_chain_id": 8453, "dst_token": USDC_ARB, "dst_chain_id": 42161},
    "nft": {"collection_address": NFT, "chain_id": 8453, "token_id": "42"},
    "deposit": {
        "recipient_address": RECIPIENT,
        "accepted_tokens": [USDC_BASE, USDC_ARB],
        "accepted_chains": [8453, 42161],
    },
}


def _create(client, widget_type="checkout", **fields):
    body = {"name": f"My {widget_type}", "widget_type": widget_type, "config": CONFIGS[widget_type], **fields}
    response = client.post("/api/v1/widgets", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.parametrize("widget_type", sorted(CONFIGS))
def test_each_type_of_widget_is_created_with_its_config(admin_client, tokens, widget_type):
    widget = _create(admin_client, widget_type, theme={"primary_color": "#ff6600", "dark_mode": True})
    assert widget["id"].startswith("wgt_") and widget["object"] == "widget"
    assert (widget["widget_type"], widget["is_active"], widget["current_views"]) == (widget_type, True, 0)
    assert widget["config"] == CONFIGS[widget_type]
    assert widget["theme"] == {"primary_color": "#ff6600", "dark_mode": True}
    assert widget["url"].endswith(f"/widgets/{widget['short_code']}") and len(widget["short_code"]) == 8
    assert admin_client.get(f"/api/v1/widgets/{widget['id']}").json() == widget


def test_a_checkout_widget_without_an_amount_lets_the_payer_choose(admin_client, tokens):
    config = {key: value for key, value in CONFIGS["checkout"].items() if key != "amount"}
    widget = _create(admin_client, config=config)
    assert widget["config"]["amount"] is None


@pytest.mark.parametrize(
    ("widget_type", "config", "param", "code"),
    [
        (
            "checkout",
            {**CONFIGS["checkout"], "recipient_address": "0x12"},
            "config.recipient_address",
            "invalid_address",
        ),
        (
            "checkout",
            {**CONFIGS["checkout"], "destination_chain_id": 999},
            "config.destination_chain_id",
            "invalid_field_value",
        ),
        (
            "checkout",
            {**CONFIGS["checkout"], "destination_token": USDC_ARB},
            "config.destination_token",
            "invalid_field_value",
        ),  # not a registry token on that chain
        ("checkout", {**CONFIGS["checkout"], "amount": "0"}, "config.amount", "invalid_field_value"),
        ("checkout", {**CONFIGS["checkout"], "colour": "red"}, "config.colour", "parameter_unknown"),
        ("checkout", {"recipient_address": RECIPIENT}, "config.destination_token", "missing_required_field"),
        (
            "swap",
            {**CONFIGS["swap"], "dst_token": USDC_BASE, "dst_chain_id": 8453},
            "config.dst_token",
            "invalid_field_value",
        ),
        ("swap", CONFIGS["checkout"], "config.src_token", "missing_required_field"),  # another type's keys
        ("nft", {**CONFIGS["nft"], "token_id": "-1"}, "config.token_id", "invalid_field_value"),
        (
            "deposit",
            {**CONFIGS["deposit"], "accepted_tokens": []},
            "config.accepted_tokens",
            "invalid_field_value",
        ),
        (
            "deposit",
            {**CONFIGS["deposit"], "accepted_tokens": [NFT]},
            "config.accepted_tokens",
            "invalid_field_value",
        ),  # no accepted token is in the registry on an accepted chain
        (
            "deposit",
            {**CONFIGS["deposit"], "accepted_chains": ["8453"]},
            "config.accepted_chains[0]",
            "invalid_field_value",
        ),
        ("kiosk", CONFIGS["checkout"], "widget_type", "invalid_field_value"),
        ("checkout", "{}", "config", "invalid_field_value"),  # an object, never a string
    ],
)
def test_a_bad_config_is_refused_with_its_param(admin_client, tokens, widget_type, config, param, code):
    response = admin_client.post(
        "/api/v1/widgets", {"name": "W", "widget_type": widget_type, "config": config}, format="json"
    )
    assert response.status_code == 400, response.content
    assert (response.json()["error"]["param"], response.json()["error"]["code"]) == (param, code)
    assert not Widget.objects.exists() and not AuditEvent.objects.exists()


@pytest.mark.parametrize(
    ("theme", "param"),
    [
        ({"primary_color": "orange"}, "theme.primary_color"),
        ({"border_radius": 100}, "theme.border_radius"),
        (
            {"font_family": "Inter; } body { display: none"},
            "theme.font_family",
        ),  # written into the page's CSS
        ({"dark_mode": "yes"}, "theme.dark_mode"),
        ({"shadow": True}, "theme.shadow"),
    ],
)
def test_a_bad_theme_is_refused_with_its_param(admin_client, tokens, theme, param):
    response = admin_client.post(
        "/api/v1/widgets",
        {"name": "W", "widget_type": "checkout", "config": CONFIGS["checkout"], "theme": theme},
        format="json",
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == param
    assert not Widget.objects.exists()


def test_update_checks_the_config_against_the_new_type(admin_client, tokens):
    widget = _create(admin_client)
    url = f"/api/v1/widgets/{widget['id']}"
    refused = admin_client.patch(
        url, {"widget_type": "swap"}, format="json"
    )  # the checkout config is no swap's
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "config.src_token"
    assert admin_client.get(url).json() == widget  # nothing changed, nothing audited
    assert AuditEvent.objects.filter(resource_id=widget["id"]).count() == 1
    swapped = admin_client.patch(
        url, {"widget_type": "swap", "config": CONFIGS["swap"]}, format="json"
    ).json()
    assert (swapped["widget_type"], swapped["config"]) == ("swap", CONFIGS["swap"])
    off = admin_client.patch(url, {"is_active": False, "theme": {"border_radius": 0}}, format="json").json()
    assert (off["is_active"], off["theme"]) == (False, {"border_radius": 0})
    assert admin_client.patch(url, {}, format="json").status_code == 400
    assert admin_client.delete(url).json() == {"object": "widget", "id": widget["id"], "deleted": True}
    assert admin_client.get(url).status_code == 404
    events = AuditEvent.objects.filter(resource_id=widget["id"]).values_list("event_type", flat=True)
    assert sorted(events) == ["widget.created", "widget.deleted", "widget.updated", "widget.updated"]


def test_list_filters_sorts_and_scopes_to_the_organization(admin_client, tokens, organization):
    checkout = _create(admin_client, name="Summer sale")
    swap = _create(admin_client, "swap", name="Bridge")
    Widget.objects.filter(pk=swap["id"]).update(current_views=9, is_active=False)
    names = lambda query: [w["name"] for w in admin_client.get(f"/api/v1/widgets?{query}").json()["data"]]  # noqa: E731
    assert names("widget_type=swap") == ["Bridge"]
    assert names("search=summer") == ["Summer sale"]
    assert names(f"search={checkout['short_code'][:5]}") == ["Summer sale"]
    assert names("active=false") == ["Bridge"]
    assert names("sort=current_views&order=desc") == ["Bridge", "Summer sale"]
    assert names("sort=name&order=asc") == ["Bridge", "Summer sale"]
    assert admin_client.get("/api/v1/widgets?widget_type=kiosk").json()["error"]["param"] == "widget_type"
    assert admin_client.get("/api/v1/widgets?sort=views").json()["error"]["param"] == "sort"

    other = client_for(make_api_key(OrganizationFactory(slug="other"), permissions=["admin"])[1])
    assert other.get("/api/v1/widgets").json()["data"] == []
    assert other.get(f"/api/v1/widgets/{checkout['id']}").status_code == 404
    assert other.delete(f"/api/v1/widgets/{checkout['id']}").status_code == 404
    assert Widget.objects.filter(pk=checkout["id"]).exists()


def test_a_read_key_reads_and_cannot_write(tokens, organization, admin_client):
    widget = _create(admin_client)
    reader = client_for(make_api_key(organization, permissions=["read"])[1])
    assert reader.get(f"/api/v1/widgets/{widget['id']}").status_code == 200
    denied = reader.post(
        "/api/v1/widgets", {"name": "W", "widget_type": "nft", "config": CONFIGS["nft"]}, format="json"
    )
    assert denied.status_code == 403 and Widget.objects.count() == 1


def test_stats_count_views_interactions_and_completions_by_utc_day(admin_client, tokens):
    widget = _create(admin_client)
    today = timezone.now().replace(hour=0, minute=30)  # 00:30 UTC: the same UTC day as noon
    yesterday = today - timedelta(days=1)
    rows = [
        ("view", today, ""),
        ("view", today.replace(hour=12), ""),
        ("interaction", today, "cs_1"),
        ("completion", today, "cs_1"),
        ("view", yesterday, ""),
        ("view", today - timedelta(days=40), ""),
    ]
    for kind, at, session in rows:
        WidgetEvent.objects.create(widget_id=widget["id"], kind=kind, session_id=session, created_at=at)
    stats = admin_client.get(f"/api/v1/widgets/{widget['id']}/stats?days=30").json()
    assert (stats["views"], stats["interactions"], stats["completions"]) == (3, 1, 1)
    assert stats["conversion_rate"] == round(1 / 3, 4) and stats["interaction_rate"] == round(1 / 3, 4)
    assert stats["daily"] == [
        {"date": yesterday.date().isoformat(), "views": 1, "interactions": 0, "completions": 0},
        {"date": today.date().isoformat(), "views": 2, "interactions": 1, "completions": 1},
    ]
    assert admin_client.get(f"/api/v1/widgets/{widget['id']}/stats?days=0").json()["error"]["param"] == "days"


# --- the embeddable page ----------------------------------------------------------------------------------


def test_the_page_can_be_framed_and_counts_views_without_the_ip(admin_client, tokens):
    widget = _create(admin_client, theme={"primary_color": "#ffd84d", "font_family": "Inter, sans-serif"})
    page = Client().get(f"/widgets/{widget['short_code']}", REMOTE_ADDR="203.0.113.9")
    assert page.status_code == 200 and "X-Frame-Options" not in page.headers
    html = page.content.decode()
    assert "My checkout" in html and "25 USDC" in html and 'target="_blank"' in html
    assert "--accent: #ffd84d" in html and "Inter, sans-serif" in html
    assert (
        Client().get("/pay/nope1234").headers["X-Frame-Options"] == "DENY"
    )  # the checkout itself is not framed
    Client().get(f"/widgets/{widget['short_code']}")
    flush_views()  # as beat does every few seconds
    assert Widget.objects.get(pk=widget["id"]).current_views == 2
    assert WidgetEvent.objects.filter(widget_id=widget["id"], kind="view").count() == 2
    stored = [str(value) for event in WidgetEvent.objects.values() for value in event.values()]
    assert not any("203.0.113.9" in value for value in stored)
    assert admin_client.get(f"/api/v1/widgets/{widget['id']}").json()["current_views"] == 2


def test_a_checkout_widget_starts_a_session_for_its_recipient(admin_client, tokens):
    widget = _create(admin_client)
    started = Client().post(f"/widgets/{widget['short_code']}")
    session = CheckoutSession.objects.get()
    assert started.status_code == 302 and started["Location"] == f"/pay/s/{session.id}"
    assert (session.widget_id, session.recipient_address, session.token_address, session.chain_id) == (
        widget["id"],
        RECIPIENT,
        USDC_BASE,
        8453,
    )
    assert session.amount == 25_000_000 and session.payment_link_id is None
    assert admin_client.get(f"/api/v1/checkout-sessions/{session.id}").json()["widget_id"] == widget["id"]
    assert WidgetEvent.objects.filter(
        widget_id=widget["id"], kind="interaction", session_id=session.id
    ).exists()
    assert Widget.objects.get(pk=widget["id"]).current_views == 0  # a checkout started is not a view


def test_a_deposit_widget_takes_one_of_its_options_and_the_payer_chooses_the_amount(
    admin_client, tokens, django_assert_max_num_queries
):
    widget = _create(admin_client, "deposit")
    with django_assert_max_num_queries(4):  # the widget, its options' tokens at once, the view counted
        page = Client().get(f"/widgets/{widget['short_code']}").content.decode()
    assert f'value="8453:{USDC_BASE}"' in page and f'value="42161:{USDC_ARB}"' in page
    assert f'value="42161:{USDC_BASE}"' not in page  # Base's USDC is not on Arbitrum
    refused = Client().post(f"/widgets/{widget['short_code']}", {"deposit": f"42161:{USDC_BASE}"})
    assert refused.status_code == 400 and not CheckoutSession.objects.exists()
    started = Client().post(f"/widgets/{widget['short_code']}", {"deposit": f"42161:{USDC_ARB}"})
    session = CheckoutSession.objects.get()
    assert started["Location"] == f"/pay/s/{session.id}"
    assert (session.chain_id, session.token_address, session.amount) == (42161, USDC_ARB, None)
    assert 'name="amount"' in Client().get(started["Location"]).content.decode()  # asked on the checkout page


def test_swap_and_nft_widgets_render_and_start_no_checkout(admin_client, tokens):
    swap = _create(admin_client, "swap")
    html = Client().get(f"/widgets/{swap['short_code']}").content.decode()
    assert "USDC on Base" in html and "USDC on Arbitrum" in html
    quoted = Client().get(f"/widgets/{swap['short_code']}?amount=abc").content.decode()
    assert "Enter an amount greater than zero." in quoted
    assert Client().post(f"/widgets/{swap['short_code']}").status_code == 302
    nft = _create(admin_client, "nft")
    assert "#42" in Client().get(f"/widgets/{nft['short_code']}").content.decode()
    assert not CheckoutSession.objects.exists()


def test_an_inactive_or_unknown_widget_is_unavailable_and_not_counted(admin_client, tokens):
    widget = _create(admin_client, is_active=False)
    off = Client().get(f"/widgets/{widget['short_code']}")
    assert off.status_code == 410 and "turned off" in off.content.decode()
    assert Client().post(f"/widgets/{widget['short_code']}").status_code == 410
    assert Client().get("/widgets/zzzzzzzz").status_code == 404
    assert not WidgetEvent.objects.exists() and not CheckoutSession.objects.exists()


def test_widgets_in_the_admin(staff, admin_client, tokens):
    widget = _create(admin_client, name="Admin widget")
    listing = staff.get("/admin/checkout/widget/?widget_type__exact=checkout&q=Admin")
    assert listing.status_code == 200 and "Admin widget" in listing.content.decode()
    assert f'href="/widgets/{widget["short_code"]}"' in listing.content.decode()


def test_checkouts_started_are_limited_per_client_ip(admin_client, tokens, settings):
    settings.HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE = 2
    widget = _create(admin_client)
    url = f"/widgets/{widget['short_code']}"
    assert [Client().post(url, REMOTE_ADDR="198.51.100.7").status_code for _ in range(2)] == [302, 302]
    refused = Client().post(url, REMOTE_ADDR="198.51.100.7")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many checkouts" in refused.content.decode()
    assert Client().post(url, REMOTE_ADDR="198.51.100.8").status_code == 302  # another payer is not held up
    assert CheckoutSession.objects.count() == 3
    assert Client().get(url, REMOTE_ADDR="198.51.100.7").status_code == 200  # viewing is never limited
