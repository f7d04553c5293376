"""Staff see the merchant resources in the admin, searchable, without their personal data."""

import pytest

from merchant.models import Customer

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
    for path, term in (
        ("checkout/paymentlink", "Poster"),
        ("merchant/product", "Mug"),
        ("checkout/discountcode", "TEN"),
        ("merchant/customer", "aaaa"),
        ("checkout/checkoutsession", "cs_"),
        ("checkout/transaction", "txn_"),
        ("checkout/widget", "w"),
        ("webhooks/notificationsettings", "x"),
    ):
        page = staff.get(f"/admin/{path}/?q={term}")
        assert page.status_code == 200, path
    detail = staff.get(f"/admin/merchant/customer/{customer['id']}/change/").content.decode()
    assert "ada@secret.example" not in detail and "Ada Secret" not in detail
    assert Customer.objects.get().email == "ada@secret.example"
    assert "Poster" in staff.get("/admin/checkout/paymentlink/?q=Poster").content.decode()
