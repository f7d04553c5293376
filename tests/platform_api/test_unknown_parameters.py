"""An unknown or misspelt parameter on the platform interface is refused, naming it (Stripe's
`parameter_unknown`), and nothing is written (issue 64, item 10): `chainId`, the order interface's spelling,
made a payment link on the default chain, and `colour` was accepted."""

from __future__ import annotations

import pytest

from checkout.models import PaymentLink
from tests.factories import BASE, USDC_BASE

pytestmark = pytest.mark.django_db

LINK = {
    "name": "Tee",
    "token_address": USDC_BASE,
    "chain_id": BASE,
    "amount": "1000",
    "recipient_address": "0x" + "12" * 20,
}


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/api/v1/payment-links", LINK | {"chainId": 31337}, "chainId"),
        ("/api/v1/payment-links", LINK | {"colour": "#ff0000"}, "colour"),
        (
            "/api/v1/checkout-sessions",
            {k: LINK[k] for k in ("token_address", "chain_id", "amount")} | {"amout": "5"},
            "amout",
        ),
        (
            "/api/v1/quick-pay",
            {
                "amount": "5",
                "token_address": USDC_BASE,
                "chain_id": BASE,
                "recipient_address": LINK["recipient_address"],
                "memo": "x",
            },
            "memo",
        ),
        (
            "/api/v1/webhooks",
            {"url": "https://hooks.example/x", "events": ["payment.completed"], "secret": "mine"},
            "secret",
        ),
        ("/api/v1/customers", {"wallet_address": "0x" + "34" * 20, "nickname": "A"}, "nickname"),
        (
            "/api/v1/products",
            {"name": "Tee", "amount": "5", "token_address": USDC_BASE, "chain_id": BASE, "sku": "T1"},
            "sku",
        ),
    ],
)
def test_an_unknown_parameter_is_refused_naming_it_and_writes_nothing(
    admin_client, tokens, path, body, param
):
    response = admin_client.post(path, body, format="json")

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "parameter_unknown",
        param,
    )
    assert f"unknown parameter: {param}" in error["message"]
    assert not PaymentLink.objects.exists()


def test_an_update_with_an_unknown_parameter_changes_nothing(admin_client, tokens):
    link = admin_client.post("/api/v1/payment-links", LINK, format="json").json()

    response = admin_client.patch(
        f"/api/v1/payment-links/{link['id']}", {"description": "A tee", "nmae": "Typo"}, format="json"
    )

    assert (response.status_code, response.json()["error"]["param"]) == (400, "nmae")
    assert response.json()["error"]["code"] == "parameter_unknown"
    assert PaymentLink.objects.get(pk=link["id"]).description == ""
    # naming no field it may change at all is the contract's no_updates_provided
    nothing = admin_client.patch(f"/api/v1/payment-links/{link['id']}", {"nmae": "Typo"}, format="json")
    assert (nothing.status_code, nothing.json()["error"]["code"]) == (400, "no_updates_provided")
    patched = admin_client.patch(f"/api/v1/payment-links/{link['id']}", {"is_active": False}, format="json")
    assert patched.status_code == 200  # what the contract names is kept
