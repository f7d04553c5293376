"""Payment links on the platform interface: create, read, list, update, delete, duplicate, items, sessions."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from checkout.models import CheckoutSession, PaymentLink, PaymentLinkItem
from checkout.visits import flush_views
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key
from tests.orders.conftest import RECIPIENT, USDC_ARB, USDC_BASE
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

LINK = {
    "name": "Sticker pack",
    "token_address": USDC_BASE,
    "chain_id": 8453,
    "recipient_address": RECIPIENT,
    "amount": "5000000",
}


def create(client, **fields):
    return client.post("/api/v1/payment-links", {**LINK, **fields}, format="json")


@pytest.fixture
def link(admin_client, tokens):
    response = create(admin_client, items=[{"name": "Sticker", "amount": "2500000", "quantity": 2}])
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def other_client(tokens):
    return client_for(make_api_key(OrganizationFactory(slug="globex"), permissions=["admin"])[1])


def test_create_answers_the_link_with_its_items_url_and_short_code(admin_client, link, settings):
    assert link["object"] == "payment_link" and link["id"].startswith("pl_")
    assert len(link["short_code"]) == 8
    assert link["url"] == f"{settings.PUBLIC_BASE_URL}/pay/{link['short_code']}"
    assert (link["amount"], link["current_uses"], link["is_active"], link["button_text"]) == (
        "5000000",
        0,
        True,
        "Pay",
    )
    assert [(i["name"], i["amount"], i["quantity"]) for i in link["items"]] == [("Sticker", "2500000", 2)]
    assert isinstance(link["created_at"], int) and isinstance(link["form_schema"], dict)
    event = AuditEvent.objects.get(event_type="payment_link.created")
    assert (event.resource_id, event.status_code, event.request_method) == (link["id"], 201, "POST")


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"name": None}, "name", "invalid_field_value"),
        ({"name": "x" * 101}, "name", "invalid_field_value"),
        ({"recipient_address": "0x12"}, "recipient_address", "invalid_address"),
        ({"token_address": USDC_ARB}, "token_address", "invalid_field_value"),  # not on chain 8453
        ({"chain_id": 999999}, "chain_id", "invalid_field_value"),
        ({"amount": "12.5"}, "amount", "invalid_field_value"),
        ({"min_amount": "100"}, "min_amount", "invalid_field_value"),  # a fixed price has no bounds
        ({"amount": None, "min_amount": "10", "max_amount": "5"}, "max_amount", "invalid_field_value"),
        (
            {"amount": None, "min_amount": "10", "suggested_amount": "5"},
            "suggested_amount",
            "invalid_field_value",
        ),
        ({"theme_color": "red"}, "theme_color", "invalid_field_value"),
        ({"max_uses": 0}, "max_uses", "invalid_field_value"),
        ({"expires_at": 1000}, "expires_at", "invalid_field_value"),
        (
            {"form_schema": {"fields": [{"id": "a", "type": "color", "label": "A"}]}},
            "form_schema.fields[0].type",
            "invalid_field_value",
        ),
        (
            {"form_schema": {"fields": [{"id": "s", "type": "select", "label": "S"}]}},
            "form_schema.fields[0].options",
            "invalid_field_value",
        ),
        (
            {"shipping_options": [{"id": "std", "name": "Standard", "amount": "x"}]},
            "shipping_options[0].amount",
            "invalid_field_value",
        ),
        ({"items": [{"name": "A"}]}, "items[0].amount", "missing_required_field"),
        ({"product_id": "prod_nope"}, "product_id", "invalid_field_value"),
        ({"fee_on_top": "yes"}, "fee_on_top", "invalid_field_value"),
    ],
)
def test_a_bad_field_is_refused_with_its_param_and_nothing_is_written(
    admin_client, tokens, fields, param, code
):
    body = {key: value for key, value in {**LINK, **fields}.items() if value is not None or key != "amount"}
    if fields.get("name", "") is None:
        body.pop("name")
        code = "missing_required_field"
    response = admin_client.post("/api/v1/payment-links", body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["param"], error["code"]) == (param, code)
    assert not PaymentLink.objects.exists() and not AuditEvent.objects.exists()


def test_a_read_key_cannot_create_a_link(tokens, organization):
    reader = client_for(make_api_key(organization, permissions=["read"])[1])
    response = create(reader)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_permissions"
    assert not PaymentLink.objects.exists()


def test_the_same_idempotency_key_creates_one_link(admin_client, tokens):
    first = admin_client.post("/api/v1/payment-links", LINK, format="json", HTTP_IDEMPOTENCY_KEY="link-1")
    again = admin_client.post("/api/v1/payment-links", LINK, format="json", HTTP_IDEMPOTENCY_KEY="link-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true" and again.json()["id"] == first.json()["id"]
    assert PaymentLink.objects.count() == 1


def test_list_filters_searches_and_sorts(admin_client, tokens):
    for name in ("Banana", "apple", "Cherry"):
        assert create(admin_client, name=name).status_code == 201
    cherry = PaymentLink.objects.get(name="Cherry")
    admin_client.patch(f"/api/v1/payment-links/{cherry.id}", {"is_active": False}, format="json")

    by_name = admin_client.get("/api/v1/payment-links?sort=name&order=asc").json()
    assert [link["name"] for link in by_name["data"]] == ["Banana", "Cherry", "apple"]
    assert (by_name["object"], by_name["total_count"], by_name["has_more"]) == ("list", 3, False)
    assert [x["name"] for x in admin_client.get("/api/v1/payment-links?search=ANAN").json()["data"]] == [
        "Banana"
    ]
    code = cherry.short_code[2:6]
    assert cherry.id in [
        x["id"] for x in admin_client.get(f"/api/v1/payment-links?search={code}").json()["data"]
    ]
    inactive = admin_client.get("/api/v1/payment-links?active=false").json()["data"]
    assert [x["name"] for x in inactive] == ["Cherry"]
    page = admin_client.get("/api/v1/payment-links?limit=2&sort=name&order=asc").json()
    assert len(page["data"]) == 2 and page["has_more"] is True
    for query, param in (("active=maybe", "active"), ("sort=amount", "sort"), ("limit=0", "limit")):
        response = admin_client.get(f"/api/v1/payment-links?{query}")
        assert response.status_code == 400 and response.json()["error"]["param"] == param


def test_another_organizations_link_is_not_found(link, other_client):
    for method in ("get", "patch", "delete"):
        response = getattr(other_client, method)(
            f"/api/v1/payment-links/{link['id']}", {"name": "x"}, format="json"
        )
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "resource_not_found"
    for path in ("duplicate", "items", "sessions", "stats", "visitors"):
        call = other_client.post if path == "duplicate" else other_client.get
        assert call(f"/api/v1/payment-links/{link['id']}/{path}").status_code == 404
    assert other_client.get("/api/v1/payment-links").json()["data"] == []
    assert PaymentLink.objects.get(pk=link["id"]).name == "Sticker pack"


def test_update_changes_fields_and_a_fixed_price_clears_the_bounds(admin_client, link):
    variable = admin_client.patch(
        f"/api/v1/payment-links/{link['id']}",
        {"amount": None, "min_amount": "1000", "max_amount": "9000"},
        format="json",
    ).json()
    assert (variable["amount"], variable["min_amount"], variable["max_amount"]) == (None, "1000", "9000")
    fixed = admin_client.patch(f"/api/v1/payment-links/{link['id']}", {"amount": "7"}, format="json").json()
    assert (fixed["amount"], fixed["min_amount"], fixed["max_amount"]) == ("7", None, None)
    assert fixed["updated_at"] >= link["updated_at"]
    assert AuditEvent.objects.filter(event_type="payment_link.updated", resource_id=link["id"]).count() == 2


def test_an_empty_or_bad_update_changes_nothing(admin_client, link):
    empty = admin_client.patch(f"/api/v1/payment-links/{link['id']}", {}, format="json")
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "no_updates_provided"
    bad = admin_client.patch(f"/api/v1/payment-links/{link['id']}", {"min_amount": "5"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "min_amount"
    stored = PaymentLink.objects.get(pk=link["id"])
    assert (stored.amount, stored.min_amount) == (5000000, None)
    assert not AuditEvent.objects.filter(event_type="payment_link.updated").exists()


def test_an_inactive_link_cannot_be_paid(admin_client, link, client):
    admin_client.patch(f"/api/v1/payment-links/{link['id']}", {"is_active": False}, format="json")
    page = client.get(f"/pay/{link['short_code']}")
    assert page.status_code == 410 and "not active" in page.content.decode()
    response = admin_client.post("/api/v1/checkout-sessions", {"payment_link_id": link["id"]}, format="json")
    assert response.status_code == 400 and response.json()["error"]["param"] == "payment_link_id"


def test_delete_hides_the_link_and_expires_its_open_sessions(admin_client, link, client):
    session = admin_client.post(
        "/api/v1/checkout-sessions", {"payment_link_id": link["id"]}, format="json"
    ).json()
    response = admin_client.delete(f"/api/v1/payment-links/{link['id']}")
    assert response.json() == {"object": "payment_link", "id": link["id"], "deleted": True}
    assert admin_client.get(f"/api/v1/payment-links/{link['id']}").status_code == 404
    assert client.get(f"/pay/{link['short_code']}").status_code == 404
    assert CheckoutSession.objects.get(pk=session["id"]).status == "expired"
    expired = WebhookEvent.objects.get(event_type="checkout.expired").data
    assert (expired["id"], expired["reason"]) == (session["id"], "payment_link_deleted")
    assert AuditEvent.objects.filter(event_type="payment_link.deleted", resource_id=link["id"]).exists()


def test_duplicate_copies_fields_and_items_with_overrides(admin_client, link):
    copy = admin_client.post(f"/api/v1/payment-links/{link['id']}/duplicate", {}, format="json")
    assert copy.status_code == 201
    body = copy.json()
    assert body["name"] == "Copy of Sticker pack" and body["id"] != link["id"]
    assert body["short_code"] != link["short_code"] and body["amount"] == "5000000"
    assert [i["name"] for i in body["items"]] == ["Sticker"]
    renamed = admin_client.post(
        f"/api/v1/payment-links/{link['id']}/duplicate", {"name": "Big pack", "amount": "9"}, format="json"
    ).json()
    assert (renamed["name"], renamed["amount"]) == ("Big pack", "9")
    assert AuditEvent.objects.filter(event_type="payment_link.created").count() == 3


def test_items_are_added_listed_and_deleted(admin_client, link, other_client):
    path = f"/api/v1/payment-links/{link['id']}/items"
    added = admin_client.post(path, {"name": "Poster", "amount": "1000", "sort_order": -1}, format="json")
    assert added.status_code == 201 and added.json()["id"].startswith("pli_")
    listed = admin_client.get(path).json()
    assert [i["name"] for i in listed["data"]] == ["Poster", "Sticker"]
    bad = admin_client.post(path, {"name": "No price"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "amount"
    item_id = added.json()["id"]
    assert other_client.delete(f"{path}/{item_id}").status_code == 404
    assert admin_client.delete(f"{path}/{item_id}").json()["deleted"] is True
    assert admin_client.delete(f"{path}/{item_id}").status_code == 404
    assert list(PaymentLinkItem.objects.values_list("name", flat=True)) == ["Sticker"]


def test_a_session_of_a_fixed_price_link_refuses_another_amount(admin_client, link):
    response = admin_client.post(
        "/api/v1/checkout-sessions", {"payment_link_id": link["id"], "amount": "1"}, format="json"
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == "amount"
    same = admin_client.post(
        "/api/v1/checkout-sessions", {"payment_link_id": link["id"], "amount": "5000000"}, format="json"
    )
    assert same.status_code == 201 and same.json()["amount"] == "5000000"
    assert CheckoutSession.objects.count() == 1


def test_sessions_of_a_link_filter_by_status(admin_client, link):
    ids = [
        admin_client.post("/api/v1/checkout-sessions", {"payment_link_id": link["id"]}, format="json").json()[
            "id"
        ]
        for _ in range(2)
    ]
    admin_client.post(f"/api/v1/checkout-sessions/{ids[0]}/expire")
    path = f"/api/v1/payment-links/{link['id']}/sessions"
    assert [s["id"] for s in admin_client.get(f"{path}?status=active").json()["data"]] == [ids[1]]
    assert [s["id"] for s in admin_client.get(f"{path}?status=expired").json()["data"]] == [ids[0]]
    assert admin_client.get(f"{path}?status=nope").status_code == 400


def test_stats_and_visitors_count_views_without_the_ip(admin_client, link, client):
    client.get(f"/pay/{link['short_code']}?utm_source=x&utm_campaign=spring", HTTP_USER_AGENT="UA/1")
    client.get(f"/pay/{link['short_code']}")
    flush_views()  # as beat does every few seconds
    stats = admin_client.get(f"/api/v1/payment-links/{link['id']}/stats?days=7").json()
    assert (stats["views"], stats["sessions"], stats["completions"], stats["days"]) == (2, 0, 0, 7)
    assert sum(day["views"] for day in stats["daily"]) == 2
    assert {"utm_source": "x", "utm_medium": None, "utm_campaign": "spring", "views": 1} in stats["utm"]
    visitors = admin_client.get(f"/api/v1/payment-links/{link['id']}/visitors").json()
    assert visitors["total_count"] == 2 and visitors["data"][1]["user_agent"] == "UA/1"
    assert all("127.0.0.1" not in str(v) for v in visitors["data"])
    assert admin_client.get(f"/api/v1/payment-links/{link['id']}/stats?days=0").status_code == 400


def test_an_update_with_items_replaces_the_links_items(admin_client, link):
    url = f"/api/v1/payment-links/{link['id']}"
    only_items = admin_client.patch(url, {"items": [{"name": "Mug", "amount": "7000000"}]}, format="json")
    assert only_items.status_code == 200, only_items.content
    assert [(item["name"], item["amount"], item["quantity"]) for item in only_items.json()["items"]] == [
        ("Mug", "7000000", 1)
    ]
    both = admin_client.patch(
        url,
        {"description": "New", "items": [{"name": "Cap", "amount": "1"}, {"name": "Pin", "amount": "2"}]},
        format="json",
    )
    assert both.status_code == 200
    assert [item["name"] for item in admin_client.get(url).json()["items"]] == ["Cap", "Pin"]
    assert admin_client.get(url).json()["description"] == "New"
    cleared = admin_client.patch(url, {"items": []}, format="json")
    assert cleared.status_code == 200 and cleared.json()["items"] == []


def test_an_update_with_bad_items_changes_nothing(admin_client, link):
    url = f"/api/v1/payment-links/{link['id']}"
    bad = admin_client.patch(url, {"description": "x", "items": [{"name": "Mug"}]}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "items[0].amount"
    unknown_product = admin_client.patch(
        url, {"items": [{"name": "Mug", "amount": "1", "product_id": "prod_nope"}]}, format="json"
    )
    assert unknown_product.status_code == 400
    assert unknown_product.json()["error"]["param"] == "items[0].product_id"
    stored = admin_client.get(url).json()
    assert [item["name"] for item in stored["items"]] == ["Sticker"] and stored["description"] != "x"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {"form_schema": {"fields": [{"name": "email", "type": "email", "label": "Email"}]}},
            "form_schema.fields[0].id",
        ),
        ({"form_schema": {"fields": [{"id": "email", "label": "Email"}]}}, "form_schema.fields[0].type"),
        ({"shipping_options": [{"id": "post", "amount": "1"}]}, "shipping_options[0].name"),
    ],
)
def test_an_update_checks_a_nested_object_whole_and_changes_nothing(admin_client, link, body, param):
    """`partial` must not reach inside a nested object: a PATCH's form field without its id was a 500."""
    url = f"/api/v1/payment-links/{link['id']}"
    response = admin_client.patch(url, {"description": "x", **body}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == param
    stored = admin_client.get(url).json()
    assert stored["description"] != "x" and stored["form_schema"] == link["form_schema"]
    assert stored["shipping_options"] == link["shipping_options"]
    whole = {"fields": [{"id": "email", "type": "email", "label": "Email", "required": True}]}
    good = admin_client.patch(url, {"form_schema": whole}, format="json")
    assert good.status_code == 200, good.content
    assert good.json()["form_schema"]["fields"][0]["id"] == "email"


def test_a_payout_on_a_chain_the_service_does_not_operate_on_is_refused_at_creation(
    admin_client, tokens, settings
):
    """Development names no deposit factory for Base: a link, a product or a session paying out there would
    only send its payers' money back, so each is refused at creation, naming the field, and nothing is kept."""
    settings.CHAINS = [
        {**chain, "factory_address": ""} if chain["chain_id"] == 8453 else chain for chain in settings.CHAINS
    ]
    refused = create(admin_client)
    assert refused.status_code == 400, refused.content
    error = refused.json()["error"]
    assert (error["param"], error["code"]) == ("chain_id", "invalid_field_value")
    assert "does not operate on Base" in error["message"]
    session = admin_client.post(
        "/api/v1/checkout-sessions",
        {"token_address": USDC_BASE, "chain_id": 8453, "recipient_address": RECIPIENT, "amount": "5000000"},
        format="json",
    )
    assert session.status_code == 400 and session.json()["error"]["param"] == "chain_id", session.content
    assert not PaymentLink.objects.exists() and not CheckoutSession.objects.exists()
    # The chain the service operates on is taken as before.
    assert create(admin_client, token_address=USDC_ARB, chain_id=42161).status_code == 201
