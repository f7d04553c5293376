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
