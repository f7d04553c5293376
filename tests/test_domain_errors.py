"""Services raise domain errors; each interface's edge gives them its own envelope and status."""

import pytest

from core import errors
from orders.envelope import to_order_error
from platform_api.errors import to_platform_error


@pytest.mark.parametrize(
    ("error", "order_status", "platform"),
    [
        (
            errors.InvalidRequest("must be a UUID", field="orderId"),
            400,
            (400, "invalid_field_value", "orderId"),
        ),
        (errors.NotFound("no webhook wh_1"), 404, (404, "resource_not_found", None)),
        (
            errors.Conflict("already has an order", field="checkoutSessionId"),
            409,
            (400, "invalid_status_transition", None),
        ),
        (errors.UpstreamError("vendorA is unavailable"), 502, (503, "internal_error", None)),
        (errors.NotConfigured("set VENDOR_B_SECRET_KEY"), 503, (503, "internal_error", None)),
    ],
)
def test_each_edge_maps_a_domain_error_to_its_own_status(error, order_status, platform):
    order_error = to_order_error(error)
    platform_error = to_platform_error(error)

    assert order_error.status == order_status
    expected = f"{error.field}: {error.message}" if error.field else error.message
    assert order_error.body() == {"success": False, "message": expected, "statusCode": order_status}
    assert (platform_error.status, platform_error.code, platform_error.param) == platform
    # The platform names the field in the message too, as its validation errors do.
    assert platform_error.message == (f"'{error.field}': {error.message}" if platform[2] else error.message)


@pytest.mark.parametrize(
    ("error", "platform"),
    [
        (
            errors.InvalidRequest("'amount' is required.", field="amount", code=errors.ErrorCode.REQUIRED),
            (400, "missing_required_field", "amount", "'amount' is required."),
        ),
        (
            errors.InvalidRequest(errors.NOTHING_TO_UPDATE, code=errors.ErrorCode.NOTHING_TO_UPDATE),
            (400, "no_updates_provided", None, errors.NOTHING_TO_UPDATE),
        ),
        (
            errors.Conflict(
                "A discount code TEN already exists.", field="code", code=errors.ErrorCode.UNIQUE
            ),
            (409, "duplicate_resource", "code", "A discount code TEN already exists."),
        ),
        (
            errors.Conflict("Delivery del_1 is already being retried."),
            (400, "invalid_status_transition", None, "Delivery del_1 is already being retried."),
        ),
    ],
)
def test_the_platform_names_a_domain_code_in_its_own_terms(error, platform):
    mapped = to_platform_error(error)

    assert (mapped.status, mapped.code, mapped.param, mapped.message) == platform


def test_a_service_refusal_reaches_the_client_by_its_domain_code(admin_client):
    """A service raises `Conflict(code=UNIQUE)`, not an HTTP error; the platform's edge answers 409."""
    body = {"wallet_address": "0x" + "b" * 40}
    assert admin_client.post("/api/v1/customers", body, format="json").status_code == 201

    again = admin_client.post("/api/v1/customers", body, format="json")

    assert again.status_code == 409
    assert again.json()["error"] | {"message": ""} == {
        "type": "invalid_request_error",
        "code": "duplicate_resource",
        "param": "wallet_address",
        "message": "",
    }
