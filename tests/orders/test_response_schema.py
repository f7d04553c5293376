"""Real order-interface responses match the OpenAPI schema they are documented with, for every order type.

schemathesis (make apicheck) cannot reach a successful order or quote (they need registry tokens and
matching metadata), so these build them and check each body against its documented response schema.
"""

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.orders.conftest import PAYLOADS, order_body
from tests.orders.test_quotes import COMMON, RECIPIENT, VARIANTS

pytestmark = pytest.mark.django_db


def _json_schema(node):
    """OpenAPI 3.0 -> JSON Schema: `nullable: true` becomes a null alternative."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _json_schema(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


@pytest.fixture(scope="module")
def openapi():
    return _json_schema(SchemaGenerator().get_schema(request=None, public=True))


def _check(openapi, path, method, response):
    operation = openapi["paths"][path][method]
    schema = operation["responses"][str(response.status_code)]["content"]["application/json"]["schema"]
    _validate(openapi, response.json(), schema)


def _validate(openapi, instance, schema):
    """`#/components/...` references resolve within the schema, so the components travel with it."""
    jsonschema.validate(instance, {**schema, "components": openapi["components"]})


@pytest.mark.parametrize("order_type", list(PAYLOADS))
def test_orders_and_their_details_match_the_schema(api_client, tokens, openapi, order_type):
    created = api_client.post("/orders", order_body(order_type), format="json")
    assert created.status_code == 200, created.json()
    _check(openapi, "/orders", "post", created)
    order_id = created.json()["data"]["id"]
    _check(openapi, "/orders/{order_id}", "get", api_client.get(f"/orders/{order_id}"))
    listed = api_client.get("/orders", {"creatorAddress": order_body(order_type)["creatorAddress"]})
    assert listed.json()["data"]
    _check(openapi, "/orders", "get", listed)


@pytest.mark.parametrize("order_type", list(VARIANTS))
def test_quotes_match_the_schema(api_client, tokens, openapi, order_type):
    body = {"type": order_type, **COMMON, **VARIANTS[order_type], "recipientAddress": RECIPIENT}
    response = api_client.post("/orders/quote", body, format="json")
    assert response.status_code == 200, response.json()
    _check(openapi, "/orders/quote", "post", response)


def test_sessions_tokens_and_errors_match_the_schema(api_client, tokens, openapi):
    created = api_client.post("/checkout-sessions", {"metadata": {"cart": "1"}}, format="json")
    _check(openapi, "/checkout-sessions", "post", created)
    session_id = created.json()["data"]["id"]
    _check(
        openapi,
        "/checkout-sessions/{session_id}",
        "get",
        api_client.get(f"/checkout-sessions/{session_id}?include=order"),
    )
    expired = api_client.post(f"/checkout-sessions/{session_id}/expire")
    _check(openapi, "/checkout-sessions/{session_id}/expire", "post", expired)
    _check(openapi, "/chains/{chain_id}/tokens", "get", api_client.get("/chains/8453/tokens"))
    _check(openapi, "/chains", "get", api_client.get("/chains"))
    refused = api_client.post("/orders", {"type": "swap"}, format="json")
    assert refused.status_code == 400
    _check(openapi, "/orders", "post", refused)


def test_the_schema_check_catches_a_wrong_shape(openapi):
    """The check itself can fail: a body with a wrong type is refused."""
    with pytest.raises(jsonschema.ValidationError):
        _validate(openapi, {"id": 1}, {"$ref": "#/components/schemas/OrderOutput"})
