import pytest

from webhooks.events import EVENT_TYPES

pytestmark = pytest.mark.django_db


def test_openapi_schema_lists_platform_endpoints_with_error_envelope(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    schema = response.json()
    for path in ("/api/v1/api-keys", "/api/v1/api-keys/{key_id}", "/api/v1/quick-pay", "/api/v1/events"):
        assert path in schema["paths"], path
    create = schema["paths"]["/api/v1/api-keys"]["post"]
    assert set(create["responses"]) >= {"201", "400", "401", "403", "409", "429", "500"}
    assert "Error" in schema["components"]["schemas"]
    quick_pay = schema["paths"]["/api/v1/quick-pay"]["post"]
    assert "201" in quick_pay["responses"]
    assert "deposit_address" in schema["components"]["schemas"]["QuickPayment"]["properties"]


def test_swagger_docs_page_is_served_without_the_internet(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger-ui" in response.content
    assert b"cdn.jsdelivr" not in response.content


def test_error_schema_enumerates_the_contract_codes(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    components = schema["components"]["schemas"]
    codes = set(components["PlatformErrorCodeEnum"]["enum"])
    assert {"key_missing", "key_invalid", "key_expired", "key_revoked", "rate_limit_exceeded"} <= codes
    assert "idempotency_error" in components["PlatformErrorTypeEnum"]["enum"]


def _resolve(schema, node):
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _param(operation, name):
    return next(p for p in operation["parameters"] if p["name"] == name)["schema"]


def test_request_schemas_state_the_rules_the_server_applies(client):
    """The cases schemathesis found allowed by the schema and refused by the server, now stated."""
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert _param(paths["/api/v1/events"]["get"], "page")["minimum"] == 1
    assert _param(paths["/chains/{chain_id}/tokens"]["get"], "chain_id")["minimum"] == 1
    assert _param(paths["/orders/{order_id}"]["get"], "order_id")["format"] == "uuid"
    session = _resolve(
        schema, paths["/checkout-sessions"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    )
    assert session["properties"]["success_url"]["pattern"].startswith("^https?://")
    assert session["additionalProperties"] is False
    token = _resolve(
        schema,
        paths["/onramp/vendorA/session-token"]["post"]["requestBody"]["content"]["application/json"][
            "schema"
        ],
    )
    assert token["properties"]["blockchains"]["minItems"] == 1
    order = _resolve(schema, paths["/orders"]["post"]["requestBody"]["content"]["application/json"]["schema"])
    assert order["discriminator"]["propertyName"] == "type"
    duel = _resolve(schema, {"$ref": order["discriminator"]["mapping"]["duel"]})
    payload = _resolve(schema, duel["properties"]["payload"])
    assert payload["required"] == ["expectedDstAmount"]
    keys = _resolve(
        schema, paths["/api/v1/api-keys"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    )
    assert keys["properties"]["permissions"]["minItems"] == 1


@pytest.mark.parametrize(
    ("path", "status"), [("/checkout-sessions", 200), ("/orders/quote", 200), ("/orders", 200)]
)
def test_the_documented_request_examples_are_accepted_as_they_stand(client, tokens, path, status):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    examples = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["examples"]
    assert examples, path

    for example in examples.values():
        response = client.post(path, example["value"], content_type="application/json")
        assert (response.status_code, response.json()["success"]) == (status, True), response.content


def test_operations_are_not_described_by_a_base_views_docstring(client):
    import inspect

    from django.views import View
    from rest_framework.views import APIView

    from core.inputs import InputChecksMixin
    from orders.envelope import OrderAPIView
    from platform_api.api import PlatformAPIView

    inherited = {
        inspect.getdoc(base) for base in (InputChecksMixin, APIView, View, OrderAPIView, PlatformAPIView)
    }
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    described = [
        (path, method, operation.get("description", ""))
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    ]
    assert len(described) > 20
    assert [(p, m) for p, m, text in described if text and text in inherited] == []


def test_the_webhook_bodies_are_documented_as_callbacks_of_creating_an_endpoint(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    callbacks = schema["paths"]["/api/v1/webhooks"]["post"]["callbacks"]
    assert set(callbacks) == set(EVENT_TYPES)  # every event an endpoint may subscribe to

    def data_of(event):
        body = callbacks[event]["{$request.body#/url}"]["post"]["requestBody"]["content"]["application/json"]
        return _resolve(schema, _resolve(schema, body["schema"])["properties"]["data"])["properties"]

    assert {"id", "payment_link_id", "amount", "tx_hash", "checkoutSession"} <= set(
        data_of("payment.completed")
    )
    assert {"error", "refund_tx_hash"} <= set(data_of("payment.failed"))
    assert {"form_data", "shipping_address", "shipping_option", "discount_code", "discount_amount"} <= set(
        data_of("checkout.completed")
    )
    for event in ("refund.created", "refund.updated", "refund.succeeded", "refund.failed"):
        assert {"id", "transaction", "amount", "status", "funding", "destination", "tx_hashes"} <= set(
            data_of(event)
        )
    assert {"status", "expires_at", "reason"} <= set(data_of("checkout.expired"))
    for event in callbacks:  # the envelope every delivery has, as delivered (webhooks.events.delivery_body)
        body = callbacks[event]["{$request.body#/url}"]["post"]["requestBody"]["content"]["application/json"]
        envelope = _resolve(schema, body["schema"])["properties"]
        assert set(envelope) == {"event", "webhook_id", "timestamp", "livemode", "data"}, event
        assert envelope["livemode"]["type"] == "boolean"


@pytest.mark.parametrize(
    ("query", "media_type"), [("?format=json", "application/json"), ("?format=yaml", "application/yaml")]
)
def test_the_format_parameter_chooses_the_schemas_format(client, query, media_type):
    response = client.get(f"/api/schema/{query}")
    assert response.status_code == 200 and response["Content-Type"].startswith(media_type)
    if media_type == "application/json":
        assert "/orders" in response.json()["paths"]
    else:
        assert response.content.startswith(b"openapi:")


def test_an_unknown_schema_format_is_a_400_naming_it(client):
    response = client.get("/api/schema/?format=xml")
    assert response.status_code == 400 and response.json()["error"]["param"] == "format"


def test_the_schema_requires_nft_metadata_for_mint_nft_orders_only(client):
    schema = client.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]

    def metadata_of(order):
        return _resolve(schema, _resolve(schema, components[order + "Request"])["properties"]["metadata"])

    mint = metadata_of("MintNftOrder")
    assert set(mint["required"]) == {"srcToken", "dstToken", "nft"}
    assert (
        mint["properties"]["nft"]["type"] == "object"
        and "mint_nft" in mint["properties"]["nft"]["description"]
    )
    assert "nft" not in metadata_of("SwapOrder").get("required", [])
