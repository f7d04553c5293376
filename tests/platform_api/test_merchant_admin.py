"""Staff see the merchant resources in the admin, searchable, without their personal data."""

import pytest

from platform_api.models import Customer

pytestmark = pytest.mark.django_db


def test_each_merchant_resource_has_a_searchable_admin_page(staff, admin_client, tokens):
    from tests.orders.conftest import RECIPIENT, USDC_BASE

    admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Poster",
            "amount": "1",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
        },
        format="json",
    )
    admin_client.post(
        "/api/v1/products",
        {
            "name": "Mug",
            "amount": "1",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
        },
        format="json",
    )
    admin_client.post(
        "/api/v1/discount-codes", {"code": "TEN", "type": "percentage", "value": 10}, format="json"
    )
    customer = admin_client.post(
        "/api/v1/customers",
        {"wallet_address": "0x" + "a" * 40, "name": "Ada Secret", "email": "ada@secret.example"},
        format="json",
    ).json()
    for model, term in (
        ("paymentlink", "Poster"),
        ("product", "Mug"),
        ("discountcode", "TEN"),
        ("customer", "aaaa"),
        ("platformcheckoutsession", "cs_"),
        ("transaction", "txn_"),
    ):
        page = staff.get(f"/admin/platform_api/{model}/?q={term}")
        assert page.status_code == 200, model
    detail = staff.get(f"/admin/platform_api/customer/{customer['id']}/change/").content.decode()
    assert "ada@secret.example" not in detail and "Ada Secret" not in detail
    assert Customer.objects.get().email == "ada@secret.example"
    assert "Poster" in staff.get("/admin/platform_api/paymentlink/?q=Poster").content.decode()
