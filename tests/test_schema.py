import pytest

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
