"""vendorB: the support check (edge header or GeoLite2 database) and card orders against a local fake."""

from decimal import Decimal
from urllib.parse import parse_qs

import pytest
from werkzeug import Response

from core.geo import _reader
from onramp.services import card_charge_cents
from orders import fees
from orders.models import Order
from tests.conftest import client_for
from tests.factories import make_api_key
from tests.orders.conftest import order_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def vendor_b(httpserver, settings):
    settings.VENDOR_B_API_URL = httpserver.url_for("/vb")
    settings.VENDOR_B_SECRET_KEY = "sk_test_local"
    return httpserver


@pytest.fixture
def edge_headers(settings):
    settings.GEOLOCATION_COUNTRY_HEADER = "CF-IPCountry"
    settings.GEOLOCATION_REGION_HEADER = "CF-Region-Code"


def _supported(client, query="", **headers):
    return client.get(f"/onramp/vendorB/supported{query}", **headers)


@pytest.mark.parametrize(
    ("country", "region", "supported"),
    [
        ("US", "NY", True),
        ("US", "HI", False),
        ("DE", None, True),
        ("FR", "IDF", True),
        ("GB", None, False),
        ("BR", None, False),
        (None, None, False),
    ],
)
def test_support_by_region_from_a_trusted_edge_header(
    api_client, vendor_b, edge_headers, country, region, supported
):
    headers = {}
    if country:
        headers["HTTP_CF_IPCOUNTRY"] = country
    if region:
        headers["HTTP_CF_REGION_CODE"] = region
    data = _supported(api_client, **headers).json()["data"]
    assert data == {"stripeOnramp": supported, "stripeWeb2": {"isSupport": supported}}


def test_amount_gives_the_card_breakdown(api_client, vendor_b, edge_headers):
    data = _supported(api_client, "?usdAmount=100", HTTP_CF_IPCOUNTRY="US").json()["data"]
    # $100: 5.4% + 0.8% service (the < $500 tier) + $0.30 = $6.50
    assert data["stripeWeb2"] == {
        "isSupport": True,
        "formattedTotalUsd": "$100.00",
        "formattedOnrampUsd": "$93.50",
        "formattedFeeUsd": "$6.50",
    }


@pytest.mark.parametrize("amount", ["0.50", "10000.01"])
def test_amounts_outside_the_limits_are_not_supported(api_client, vendor_b, edge_headers, amount):
    data = _supported(api_client, f"?usdAmount={amount}", HTTP_CF_IPCOUNTRY="US").json()["data"]
    assert data["stripeWeb2"]["isSupport"] is False
    assert data["stripeOnramp"] is True


@pytest.mark.parametrize("amount", ["abc", "-5", "NaN", "Infinity", "1000000001"])
def test_bad_amount_is_400(api_client, vendor_b, edge_headers, amount):
    response = _supported(api_client, f"?usdAmount={amount}", HTTP_CF_IPCOUNTRY="US")
    assert response.status_code == 400
    assert response.json()["message"].startswith("usdAmount")


def test_a_zero_amount_is_not_supported(api_client, vendor_b, edge_headers):
    data = _supported(api_client, "?usdAmount=0", HTTP_CF_IPCOUNTRY="US").json()["data"]
    assert (data["stripeOnramp"], data["stripeWeb2"]["isSupport"]) == (True, False)


def test_headers_are_ignored_unless_an_edge_is_configured(api_client, vendor_b):
    data = _supported(api_client, HTTP_CF_IPCOUNTRY="US").json()["data"]
    assert data["stripeOnramp"] is False


def test_support_from_a_geolite2_database(api_client, vendor_b, settings, tmp_path):
    from mmdb_writer import MMDBWriter
    from netaddr import IPSet

    writer = MMDBWriter(
        ip_version=6,
        ipv4_compatible=True,
        database_type="GeoLite2-City",
        languages=["en"],
        description="test",
    )
    writer.insert_network(
        IPSet(["203.0.113.0/24"]), {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "CA"}]}
    )
    writer.insert_network(
        IPSet(["198.51.100.0/24"]), {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "HI"}]}
    )
    path = tmp_path / "GeoLite2-City.mmdb"
    writer.to_db_file(str(path))
    settings.GEOIP_DATABASE_PATH = str(path)
    _reader.cache_clear()

    california = _supported(api_client, REMOTE_ADDR="203.0.113.7").json()["data"]
    hawaii = _supported(api_client, REMOTE_ADDR="198.51.100.7").json()["data"]
    unknown = _supported(api_client, REMOTE_ADDR="192.0.2.1").json()["data"]
    _reader.cache_clear()

    assert (california["stripeOnramp"], hawaii["stripeOnramp"], unknown["stripeOnramp"]) == (
        True,
        False,
        False,
    )


@pytest.mark.parametrize("query", ["", "?usdAmount=100"])
def test_support_check_unconfigured_says_not_supported(api_client, edge_headers, query):
    """A front end asks before it shows the card option: 200 and "no", never a 503 that breaks the page."""
    response = _supported(api_client, query, HTTP_CF_IPCOUNTRY="US")
    assert response.status_code == 200
    assert response.json()["data"] == {"stripeOnramp": False, "stripeWeb2": {"isSupport": False}}


# --- card orders ---------------------------------------------------------------

CARD = {
    "vendor": "vendorB-web2",
    "paymentMethod": "card",
    "country": "US",
    "redirectUrl": "https://shop.example/back",
}


def test_card_order_waits_for_its_payment_intent(api_client, tokens, vendor_b, organization):
    forms = []

    def handler(request):
        assert request.headers["Authorization"] == "Bearer sk_test_local"
        assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
        forms.append(
            (
                request.headers["Idempotency-Key"],
                {k: v[0] for k, v in parse_qs(request.get_data(as_text=True)).items()},
            )
        )
        return Response('{"id": "pi_123", "object": "payment_intent"}', content_type="application/json")

    vendor_b.expect_request("/vb/v1/payment_intents", method="POST").respond_with_handler(handler)
    _, raw = make_api_key(organization, permissions=["read", "write"])

    response = client_for(raw).post(
        "/orders",
        order_body(onramp={**CARD, "fingerprint": {"requestId": "r1", "visitorId": "v1"}}),
        format="json",
        REMOTE_ADDR="203.0.113.61",
    )

    assert response.status_code == 200, response.json()
    data = response.json()["data"]
    assert (data["status"], data["vendorBPaymentIntentId"]) == ("waiting_stripe_payment", "pi_123")
    idempotency_key, form = forms[0]
    assert idempotency_key == f"order-{data['id']}"
    cents = int(form["amount"])
    assert form == {
        "amount": str(cents),
        "currency": "usd",
        "automatic_payment_methods[enabled]": "true",
        "metadata[order_id]": data["id"],
        "description": f"Order {data['id']}",
    }
    fee = data["fee"]
    assert fee["type"] == "vendorBweb2_fee"
    assert fee["originalAmount"] == str(cents * 10**4)
    assert int(fee["finalAmount"]) >= 100_000_000  # what arrives covers srcAmount
    assert "ipAddress" not in data["onrampMetadata"]
    assert data["onrampMetadata"]["vendorBAmountInCents"] == cents
    full = (
        client_for(raw).get(f"/orders/{data['id']}/comprehensive").json()["data"]["order"]["onrampMetadata"]
    )
    assert full["ipAddress"] == "203.0.113.61"
    assert full["fingerprint"] == {"requestId": "r1", "visitorId": "v1"}


def test_card_order_with_a_non_usdc_source_is_400(api_client, tokens, vendor_b):
    eth = "0x0000000000000000000000000000000000000000"
    body = order_body(onramp=CARD, srcTokenAddress=eth)
    body["metadata"]["srcToken"] = {
        **body["metadata"]["srcToken"],
        "address": eth,
        "symbol": "ETH",
        "decimals": 18,
    }
    response = api_client.post("/orders", body, format="json")
    assert response.status_code == 400
    assert len(vendor_b.log) == 0
    assert not Order.objects.exists()


def test_card_vendor_refusal_stores_nothing(api_client, tokens, vendor_b):
    vendor_b.expect_request("/vb/v1/payment_intents").respond_with_json(
        {"error": {"message": "Invalid API Key"}}, status=401
    )
    response = api_client.post("/orders", order_body(onramp=CARD), format="json")
    assert response.status_code == 400
    assert response.json()["message"] == "vendorB refused the request: Invalid API Key."
    assert not Order.objects.exists()


@pytest.mark.parametrize("needed", [1, 999_999, 100_000_000, 12_345_678_901])
def test_card_charge_is_the_smallest_that_covers_the_amount(needed):
    usd_value = Decimal(needed).scaleb(-6)
    cents, card = card_charge_cents(needed_units=needed, usd_value=usd_value, recipient_balance=0)
    assert card.final_amount >= needed
    smaller = fees.card_fee(original_amount=(cents - 1) * 10**4, usd_value=usd_value, recipient_balance=0)
    assert smaller.final_amount < needed
