"""Every failure under /api/v1 answers in the platform envelope, without internals."""

import pytest
from django.test import RequestFactory

from platform_api import selectors
from platform_api.middleware import PlatformErrorMiddleware
from platform_api.models import ApiKey

pytestmark = pytest.mark.django_db


def test_malformed_json_is_400_invalid_field_value_and_writes_nothing(admin_client):
    response = admin_client.post("/api/v1/api-keys", data="{name: ", content_type="application/json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_field_value"
    assert "not valid JSON" in error["message"]
    assert ApiKey.objects.count() == 1


def test_non_json_content_type_is_400(admin_client):
    response = admin_client.post(
        "/api/v1/api-keys", data="name=x", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_field_value"
    assert "application/json" in response.json()["error"]["message"]


def test_body_that_is_not_an_object_is_400(admin_client):
    response = admin_client.post("/api/v1/api-keys", data="[1, 2]", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("path", ["/api/v1/nope", "/api/v1/api-keys/x/y", "/api/v1/"])
def test_unknown_path_is_404_in_the_envelope(api_client, path):
    response = api_client.get(path)

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": {
            "type": "not_found_error",
            "code": "resource_not_found",
            "message": f"No endpoint at GET {path}.",
        }
    }


def test_wrong_method_is_405_with_allow_header(admin_client):
    response = admin_client.put("/api/v1/api-keys", {}, format="json")

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert set(response["Allow"].split(", ")) >= {"GET", "POST"}


def test_unexpected_exception_is_500_internal_error_without_traceback(admin_client, monkeypatch):
    def explode(**kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(selectors, "api_key_list", explode)

    response = admin_client.get("/api/v1/api-keys")

    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "type": "api_error",
            "code": "internal_error",
            "message": "An unexpected error occurred. It has been logged; retry with backoff.",
        }
    }
    assert "secret internal detail" not in response.content.decode()
    assert "Traceback" not in response.content.decode()


def test_middleware_turns_errors_outside_drf_into_the_envelope():
    request = RequestFactory().get("/api/v1/anything")
    response = PlatformErrorMiddleware(lambda r: None).process_exception(request, RuntimeError("boom"))

    assert response.status_code == 500
    assert b"internal_error" in response.content
    assert b"boom" not in response.content


def test_middleware_leaves_other_interfaces_alone():
    request = RequestFactory().get("/admin/")
    assert PlatformErrorMiddleware(lambda r: None).process_exception(request, RuntimeError("boom")) is None
