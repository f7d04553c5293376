"""Every email address a payer types is checked with Django's validator: nothing that could split a mail
header reaches a receipt, and a refused form changes nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from checkout.models import CheckoutSession
from tests.orders.conftest import EMAIL_FIELD, RECIPIENT, USDC_BASE, poster_link
from webhooks.models import NotificationEmail

pytestmark = pytest.mark.django_db


@pytest.fixture
def link(admin_client, tokens):
    return poster_link(admin_client, form_schema=EMAIL_FIELD)


@pytest.mark.parametrize(
    "typed",
    [
        "victim@payer.example\r\nBcc: attacker@evil.example",
        "victim@payer.example\nBcc: attacker@evil.example",
        "a@b",
        "no-at-sign.example",
        "two@@payer.example",
        "x" * 250 + "@payer.example",
    ],
)
def test_the_hosted_form_refuses_what_is_not_one_email_address(link, typed):
    refused = Client().post(
        f"/pay/{link['short_code']}", {"pay_with": f"8453:{USDC_BASE}", "field_email": typed}
    )
    page = refused.content.decode()
    assert refused.status_code == 400 and "Enter an email address." in page
    assert not CheckoutSession.objects.exists() and not NotificationEmail.objects.exists()


def test_a_plain_address_is_taken(link):
    taken = Client().post(
        f"/pay/{link['short_code']}", {"pay_with": f"8453:{USDC_BASE}", "field_email": " ada@payer.example "}
    )
    assert taken.status_code == 302
    assert CheckoutSession.objects.get().customer_email == "ada@payer.example"


@pytest.mark.parametrize(
    ("path", "field"),
    [("/api/v1/customers", "email"), ("/api/v1/checkout-sessions", "customer_email")],
)
def test_the_api_refuses_an_address_with_a_line_break_naming_the_field(admin_client, tokens, path, field):
    body = {field: "victim@payer.example\r\nBcc: attacker@evil.example"}
    if path.endswith("customers"):
        body["wallet_address"] = "0x" + "4" * 40
    if path.endswith("checkout-sessions"):
        body |= {
            "amount": "1000000",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
        }
    refused = admin_client.post(path, body, format="json")
    assert refused.status_code == 400 and refused.json()["error"]["param"] == field
