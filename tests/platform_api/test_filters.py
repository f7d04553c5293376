"""Query strings are parsed by filter serializers: a bad value is a 400 naming the parameter, an empty one
is no filter, and the selectors get typed values."""

import pytest

from platform_api.filters import CreatedWindowFilters

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("path", "param", "message"),
    [
        ("/api/v1/transactions?chain_id=8453x", "chain_id", "'chain_id' must be a whole number."),
        ("/api/v1/transactions?status=paid", "status", "'status' must be one of: "),
        ("/api/v1/transactions?from=yesterday", "from", "'from' must be a timestamp in milliseconds"),
        ("/api/v1/checkout-sessions?to=99999999999999999", "to", "'to' must be a timestamp in milliseconds"),
        ("/api/v1/payment-links?active=yes", "active", "'active' must be 'true' or 'false'."),
        (
            "/api/v1/products?product_type=rental",
            "product_type",
            "'product_type' must be one_time or variable.",
        ),
        ("/api/v1/widgets?widget_type=banner", "widget_type", "'widget_type' must be one of "),
        ("/api/v1/discount-codes?active=1", "active", "'active' must be 'true' or 'false'."),
    ],
)
def test_a_bad_filter_is_refused_naming_its_parameter(admin_client, path, param, message):
    response = admin_client.get(path)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_field_value", param)
    assert error["message"].startswith(message)


def test_empty_filters_are_no_filters(admin_client):
    response = admin_client.get("/api/v1/transactions?status=&chain_id=&from=&to=&customer_id=")

    assert response.status_code == 200
    assert response.json()["data"] == []


def test_the_window_arrives_as_typed_datetimes():
    filters = CreatedWindowFilters.filters({"from": "0", "to": "86400000"})

    assert {name: value.isoformat() for name, value in filters.items()} == {
        "created_from": "1970-01-01T00:00:00+00:00",
        "created_to": "1970-01-02T00:00:00+00:00",
    }
