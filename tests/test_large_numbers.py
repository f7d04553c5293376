"""Found black-box: amounts past what the service can hold answered 500 (a discount value of 2**256, a
78-digit quote amount, an order for 10**30, a link of 10**40 paid on the hosted page, a widget quote of 39
nines). Every amount has one bound, checked where it arrives: a uint256, and worth at most MAX_PAYMENT_USD at
its token's reference price, so that every figure derived from it (fees, points, USD totals) fits its column.
Each is a 400 naming the field, and nothing is written."""

import pytest
from django.test import Client

from checkout.models import CheckoutSession, DiscountCode, PaymentLink, Widget
from merchant.models import Product
from orders.models import Order
from quickpay.models import QuickPayment
from tests.orders.conftest import RECIPIENT, USDC_ARB, USDC_BASE, order_body

pytestmark = pytest.mark.django_db

HUGE = "1" + "0" * 30  # 10**24 USDC: a uint256, worth more than any payment
TOKEN = {"token_address": USDC_BASE, "chain_id": 8453, "recipient_address": RECIPIENT}


def platform_refused(response, param):
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == param
    return response.json()["error"]["message"]


@pytest.mark.parametrize("value", [str(2**256), 2**256, "9" * 79])
def test_a_discount_value_past_uint256_is_400(admin_client, organization, value):
    response = admin_client.post(
        "/api/v1/discount-codes", {"code": "BIG", "type": "fixed", "value": value}, format="json"
    )
    platform_refused(response, "value")
    assert not DiscountCode.objects.exists()


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("9" * 78, "amount: Is larger than a 256-bit amount."),
        (str(2**255), "amount: is worth more than"),
        (HUGE, "amount: is worth more than 1,000,000,000,000 USD"),
    ],
)
def test_a_quote_for_an_amount_past_the_bound_is_400(api_client, tokens, amount, message):
    body = {
        "type": "swap",
        "srcChain": 8453,
        "dstChain": 42161,
        "tradeType": "EXACT_INPUT",
        "amount": amount,
        "srcTokenAddress": USDC_BASE,
        "dstTokenAddress": USDC_ARB,
        "recipientAddress": RECIPIENT,
    }
    response = api_client.post("/orders/quote", body, format="json")
    assert response.status_code == 400 and response.json()["message"].startswith(message)


@pytest.mark.parametrize("amount", [HUGE, str(2**256 - 1)])
def test_an_order_for_an_amount_past_the_bound_is_400(api_client, tokens, amount):
    response = api_client.post("/orders", order_body(srcAmount=amount), format="json")
    assert response.status_code == 400 and response.json()["message"].startswith("srcAmount: is worth more")
    assert not Order.objects.exists()


def test_an_order_just_under_the_bound_is_taken(api_client, tokens, settings):
    settings.MAX_PAYMENT_USD = 1_000_000
    assert api_client.post("/orders", order_body(srcAmount=str(10**12)), format="json").status_code == 200
    refused = api_client.post("/orders", order_body(srcAmount=str(10**12 + 1)), format="json")
    assert refused.status_code == 400 and "1,000,000 USD" in refused.json()["message"]


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/api/v1/payment-links", {"name": "x", "amount": "1" + "0" * 40}, "amount"),
        ("/api/v1/payment-links", {"name": "x", "max_amount": HUGE}, "max_amount"),
        ("/api/v1/products", {"name": "x", "amount": HUGE}, "amount"),
        ("/api/v1/checkout-sessions", {"amount": HUGE}, "amount"),
        (
            "/api/v1/widgets",
            {
                "name": "w",
                "widget_type": "checkout",
                "config": {
                    "recipient_address": RECIPIENT,
                    "destination_token": USDC_BASE,
                    "destination_chain_id": 8453,
                    "amount": HUGE,
                },
            },
            "config.amount",
        ),
    ],
)
def test_merchant_amounts_past_the_bound_are_400(admin_client, organization, tokens, path, body, param):
    if path != "/api/v1/widgets":
        body = {**TOKEN, **body}
    platform_refused(admin_client.post(path, body, format="json"), param)
    for model in (PaymentLink, Product, CheckoutSession, Widget):
        assert not model.objects.exists()


def test_a_quick_payment_past_the_bound_is_400(api_client, tokens):
    platform_refused(api_client.post("/api/v1/quick-pay", {**TOKEN, "amount": HUGE}, format="json"), "amount")
    assert not QuickPayment.objects.exists()


def test_the_payers_own_amount_past_the_bound_is_said_on_the_hosted_page(admin_client, organization, tokens):
    link = admin_client.post("/api/v1/payment-links", {**TOKEN, "name": "Tip jar"}, format="json").json()
    payer = Client()

    page = payer.post(f"/pay/{link['short_code']}", {"amount": "9" * 30, "pay_with": f"8453:{USDC_BASE}"})

    assert page.status_code == 400
    assert "is worth more than 1,000,000,000,000 USD" in page.content.decode()
    assert not CheckoutSession.objects.exists() and not Order.objects.exists()


def test_a_swap_widget_quote_of_39_nines_is_said_beside_the_amount(admin_client, organization, tokens):
    widget = admin_client.post(
        "/api/v1/widgets",
        {
            "name": "Swap",
            "widget_type": "swap",
            "config": {
                "src_token": USDC_BASE,
                "src_chain_id": 8453,
                "dst_token": USDC_ARB,
                "dst_chain_id": 42161,
            },
        },
        format="json",
    ).json()

    page = Client().get(f"/widgets/{widget['short_code']}?amount=" + "9" * 39)

    assert page.status_code == 400 and "is worth more than" in page.content.decode()
