import pytest

from orders import selectors

pytestmark = pytest.mark.django_db


def test_unknown_path_is_404_in_the_order_envelope(api_client):
    response = api_client.get("/no/such/thing")
    assert response.status_code == 404
    assert response.json() == {
        "success": False,
        "message": "No endpoint at GET /no/such/thing.",
        "statusCode": 404,
    }


def test_wrong_method_is_405_in_the_envelope(api_client):
    response = api_client.delete("/orders")
    assert response.status_code == 405
    assert response.json()["success"] is False
    assert response.json()["statusCode"] == 405
    assert "GET" in response["Allow"]


def test_malformed_json_is_400(api_client):
    response = api_client.post("/checkout-sessions", data="{oops", content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert body["success"] is False
    assert body["statusCode"] == 400
    assert "not valid JSON" in body["message"]


def test_unexpected_error_is_500_without_internals(api_client, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("db password is hunter2")

    monkeypatch.setattr(selectors, "order_with_transactions", explode)
    response = api_client.get("/orders/6f1c1d2e-8f59-4a51-9d7c-2f1f0b3c4d5e")
    assert response.status_code == 500
    assert response.json()["success"] is False
    assert "hunter2" not in response.content.decode()


def test_invalid_api_key_is_refused_not_ignored(api_client):
    response = api_client.post(
        "/checkout-sessions", {}, format="json", HTTP_AUTHORIZATION="Bearer svc_live_nope"
    )
    assert response.status_code == 401
    assert response.json() == {"success": False, "message": "The API key is not valid.", "statusCode": 401}


def test_order_writes_are_rate_limited_per_ip(api_client, settings):
    settings.ORDER_WRITE_RATE_LIMIT_PER_MINUTE = 2
    statuses = [
        api_client.post("/checkout-sessions", {}, format="json", REMOTE_ADDR="198.51.100.77").status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 429]
    response = api_client.post("/checkout-sessions", {}, format="json", REMOTE_ADDR="198.51.100.77")
    assert response.json()["statusCode"] == 429
    assert "Retry after" in response.json()["message"]
    assert "Retry-After" in response
    assert api_client.get("/chains/8453/tokens", REMOTE_ADDR="198.51.100.77").status_code == 200
