"""Products (archive on delete, generate-link) and the organization's settings with their defaults."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from checkout.models import PaymentLink
from merchant.models import Product
from platform_api.models import Organization
from tests.conftest import client_for
from tests.factories import OrganizationFactory, make_api_key
from tests.orders.conftest import RECIPIENT, USDC_ARB, USDC_BASE

pytestmark = pytest.mark.django_db

PRODUCT = {
    "name": "Mug",
    "amount": "15000000",
    "token_address": USDC_BASE,
    "chain_id": 8453,
    "recipient_address": RECIPIENT,
    "metadata": {"sku": "MUG-1"},
}


@pytest.fixture
def product(admin_client, tokens):
    response = admin_client.post("/api/v1/products", PRODUCT, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_product_is_created_listed_updated_and_archived(admin_client, product):
    assert (product["object"], product["product_type"], product["is_active"]) == ("product", "one_time", True)
    assert product["id"].startswith("prod_") and product["metadata"] == {"sku": "MUG-1"}
    renamed = admin_client.patch(
        f"/api/v1/products/{product['id']}", {"name": "Big mug"}, format="json"
    ).json()
    assert renamed["name"] == "Big mug"
    assert admin_client.delete(f"/api/v1/products/{product['id']}").json()["deleted"] is True
    assert admin_client.get("/api/v1/products").json()["data"] == []  # archived: not in the default list
    archived = admin_client.get("/api/v1/products?active=false").json()["data"]
    assert [p["id"] for p in archived] == [product["id"]] and archived[0]["is_active"] is False
    assert admin_client.get(f"/api/v1/products/{product['id']}").json()["is_active"] is False
    events = AuditEvent.objects.filter(resource_id=product["id"]).values_list("event_type", flat=True)
    assert sorted(events) == ["product.created", "product.deleted", "product.updated"]


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"amount": None}, "amount", "missing_required_field"),
        ({"product_type": "variable"}, "amount", "invalid_field_value"),  # a variable product has no price
        ({"product_type": "subscription"}, "product_type", "invalid_field_value"),
        ({"token_address": USDC_ARB}, "token_address", "invalid_field_value"),
        ({"recipient_address": None}, "recipient_address", "missing_required_field"),  # and no default
        (
            {"shipping_options": [{"id": "x", "name": "X"}]},
            "shipping_options[0].amount",
            "missing_required_field",
        ),
    ],
)
def test_a_bad_product_is_refused_with_its_param(admin_client, tokens, fields, param, code):
    body = {key: value for key, value in {**PRODUCT, **fields}.items() if value is not None}
    response = admin_client.post("/api/v1/products", body, format="json")
    assert response.status_code == 400, response.content
    assert (response.json()["error"]["param"], response.json()["error"]["code"]) == (param, code)
    assert not Product.objects.exists() and not AuditEvent.objects.exists()


def test_list_filters_by_type_and_search(admin_client, tokens):
    admin_client.post("/api/v1/products", PRODUCT, format="json")
    admin_client.post(
        "/api/v1/products",
        {**PRODUCT, "name": "Tip jar", "amount": None, "product_type": "variable"},
        format="json",
    )
    assert [p["name"] for p in admin_client.get("/api/v1/products?product_type=variable").json()["data"]] == [
        "Tip jar"
    ]
    assert [p["name"] for p in admin_client.get("/api/v1/products?search=MUG").json()["data"]] == ["Mug"]
    assert admin_client.get("/api/v1/products?product_type=rental").json()["error"]["param"] == "product_type"


def test_generate_link_makes_a_payment_link_from_the_product(admin_client, product):
    response = admin_client.post(f"/api/v1/products/{product['id']}/generate-link", {}, format="json")
    assert response.status_code == 201, response.content
    link = response.json()
    assert (link["object"], link["name"], link["amount"], link["product_id"]) == (
        "payment_link",
        "Mug",
        "15000000",
        product["id"],
    )
    assert (link["token_address"], link["chain_id"], link["recipient_address"]) == (
        USDC_BASE,
        8453,
        RECIPIENT,
    )
    custom = admin_client.post(
        f"/api/v1/products/{product['id']}/generate-link",
        {"name": "Mug (sale)", "amount": "9000000"},
        format="json",
    ).json()
    assert (custom["name"], custom["amount"]) == ("Mug (sale)", "9000000")
    admin_client.delete(f"/api/v1/products/{product['id']}")
    refused = admin_client.post(f"/api/v1/products/{product['id']}/generate-link", {}, format="json")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_status_transition"
    assert PaymentLink.objects.count() == 2
    assert (
        admin_client.get(f"/api/v1/payment-links/{link['id']}").json()["is_active"] is True
    )  # still payable


def test_another_organizations_product_is_not_found(product):
    other = client_for(make_api_key(OrganizationFactory(slug="globex"), permissions=["admin"])[1])
    for method, path in (("get", ""), ("patch", ""), ("delete", ""), ("post", "/generate-link")):
        assert (
            getattr(other, method)(
                f"/api/v1/products/{product['id']}{path}", {"name": "x"}, format="json"
            ).status_code
            == 404
        )
    link = other.post(
        "/api/v1/payment-links",
        {
            "name": "x",
            "amount": "1",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
            "product_id": product["id"],
        },
        format="json",
    )
    assert link.status_code == 400 and link.json()["error"]["param"] == "product_id"


def test_organization_settings_and_their_defaults(admin_client, organization, tokens):
    got = admin_client.get("/api/v1/organization").json()
    assert (got["object"], got["slug"], got["default_chain_id"]) == ("organization", "acme", None)
    missing = admin_client.post("/api/v1/payment-links", {"name": "No target", "amount": "1"}, format="json")
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "token_address"

    updated = admin_client.patch(
        "/api/v1/organization",
        {
            "name": "Acme Inc.",
            "website_url": "https://acme.example",
            "default_chain_id": 8453,
            "default_token_address": USDC_BASE,
            "default_recipient_address": RECIPIENT,
        },
        format="json",
    )
    assert updated.status_code == 200, updated.content
    assert (updated.json()["name"], updated.json()["default_token_address"]) == ("Acme Inc.", USDC_BASE)
    link = admin_client.post(
        "/api/v1/payment-links", {"name": "Defaults", "amount": "1"}, format="json"
    ).json()
    assert (link["token_address"], link["chain_id"], link["recipient_address"]) == (
        USDC_BASE,
        8453,
        RECIPIENT,
    )
    product = admin_client.post("/api/v1/products", {"name": "Defaults", "amount": "1"}, format="json").json()
    assert product["recipient_address"] == RECIPIENT
    assert AuditEvent.objects.filter(event_type="organization.updated").count() == 1


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"slug": "new"}, "slug"),
        ({"default_token_address": USDC_ARB, "default_chain_id": 8453}, "default_token_address"),
        ({"default_token_address": USDC_BASE}, "default_chain_id"),
        ({"website_url": "not a url"}, "website_url"),
        ({"default_recipient_address": "0x12"}, "default_recipient_address"),
        ({}, None),
    ],
)
def test_a_bad_organization_update_changes_nothing(admin_client, organization, tokens, body, param):
    response = admin_client.patch("/api/v1/organization", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"].get("param") == param
    stored = Organization.objects.get(pk=organization.pk)
    assert (stored.slug, stored.default_token_address, stored.website_url) == ("acme", "", "")


def test_only_admin_keys_change_the_organization(organization):
    writer = client_for(make_api_key(organization, permissions=["write"])[1])
    assert writer.get("/api/v1/organization").status_code == 200
    assert writer.patch("/api/v1/organization", {"name": "x"}, format="json").status_code == 403


def test_an_update_with_a_partial_form_field_is_refused_and_changes_nothing(admin_client, product):
    url = f"/api/v1/products/{product['id']}"
    body = {"name": "Renamed", "form_schema": {"fields": [{"id": "size", "type": "select", "label": "Size"}]}}
    response = admin_client.patch(url, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == "form_schema.fields[0].options"
    assert admin_client.get(url).json()["name"] == "Mug"
