"""vendorA against a local fake that checks what the service sends (JWT, body, client IP)."""

import json
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from werkzeug import Response

from chains.families import deposit_address
from orders.models import Order
from tests.orders.conftest import order_body

pytestmark = pytest.mark.django_db

ADDRESS = "0x1111111111111111111111111111111111111111"


def _pem(key) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@pytest.fixture(params=["ES256", "EdDSA"])
def vendor_a(request, httpserver, settings):
    key = (
        ec.generate_private_key(ec.SECP256R1())
        if request.param == "ES256"
        else ed25519.Ed25519PrivateKey.generate()
    )
    settings.VENDOR_A_API_URL = httpserver.url_for("/api")
    settings.VENDOR_A_PAY_URL = "https://pay.vendor-a.test"
    settings.VENDOR_A_KEY_ID = "organizations/acme/apiKeys/k1"
    settings.VENDOR_A_PRIVATE_KEY = _pem(key)
    httpserver.public_key = key.public_key()
    httpserver.algorithm = request.param
    return httpserver


def _check_jwt(server, request, method, path):
    scheme, token = request.headers["Authorization"].split(" ")
    assert scheme == "Bearer"
    header = jwt.get_unverified_header(token)
    assert (header["alg"], header["kid"]) == (server.algorithm, "organizations/acme/apiKeys/k1")
    claims = jwt.decode(token, server.public_key, algorithms=[server.algorithm])
    assert claims["sub"] == "organizations/acme/apiKeys/k1"
    assert claims["iss"] == "cdp"
    assert claims["nbf"] <= claims["iat"] < claims["exp"] <= claims["iat"] + 120
    assert claims["uri"] == f"{method} {server.host}:{server.port}{path}"


def _token_handler(server, seen):
    def handler(request):
        _check_jwt(server, request, "POST", "/api/onramp/v1/token")
        seen.append(json.loads(request.data))
        return Response(
            json.dumps({"token": "sess-tok-1", "channel_id": "chan-9"}), content_type="application/json"
        )

    return handler


def test_session_token(api_client, vendor_a):
    seen = []
    vendor_a.expect_request("/api/onramp/v1/token", method="POST").respond_with_handler(
        _token_handler(vendor_a, seen)
    )

    response = api_client.post(
        "/onramp/vendorA/session-token",
        {"destinationAddress": ADDRESS, "blockchains": ["base"], "assets": ["USDC"]},
        format="json",
        REMOTE_ADDR="203.0.113.44",
        HTTP_X_FORWARDED_FOR="6.6.6.6",  # not trusted: no proxy is configured
    )

    assert response.status_code == 200, response.json()
    assert response.json()["data"] == {"token": "sess-tok-1", "channelId": "chan-9"}
    assert seen == [
        {
            "addresses": [{"address": ADDRESS, "blockchains": ["base"]}],
            "assets": ["USDC"],
            "clientIp": "203.0.113.44",
        }
    ]


def test_onramp_url_embeds_the_session_token_and_options(api_client, vendor_a):
    vendor_a.expect_request("/api/onramp/v1/token").respond_with_handler(_token_handler(vendor_a, []))
    body = {
        "presetFiatAmount": "25.00",
        "fiatCurrency": "USD",
        "defaultAsset": "USDC",
        "defaultPaymentMethod": "CARD",
        "destinationAddress": ADDRESS,
        "blockchains": ["base"],
        "country": "US",
        "orderId": "order-1",
        "redirectUrl": "https://shop.example/back",
    }

    plain = api_client.post("/onramp/vendorA/onramp-url", body, format="json").json()["data"]
    with_token = api_client.post(
        "/onramp/vendorA/onramp-url", {**body, "useSessionToken": True}, format="json"
    ).json()["data"]

    url = urlsplit(plain["url"])
    assert (url.scheme, url.netloc, url.path) == ("https", "pay.vendor-a.test", "/buy/select-asset")
    assert {k: v[0] for k, v in parse_qs(url.query).items()} == {
        "sessionToken": "sess-tok-1",
        "defaultAsset": "USDC",
        "defaultNetwork": "base",
        "presetFiatAmount": "25.00",
        "fiatCurrency": "USD",
        "defaultPaymentMethod": "CARD",
        "redirectUrl": "https://shop.example/back",
        "partnerUserRef": "order-1",
    }
    assert "sessionToken" not in plain
    assert with_token["sessionToken"] == "sess-tok-1"


def test_direct_url(api_client, vendor_a):
    vendor_a.expect_request("/api/onramp/v1/token").respond_with_handler(_token_handler(vendor_a, []))
    data = api_client.post(
        "/onramp/vendorA/direct-url",
        {"destinationAddress": ADDRESS, "blockchains": ["ethereum"]},
        format="json",
    ).json()["data"]
    assert data["sessionToken"] == "sess-tok-1"
    assert parse_qs(urlsplit(data["url"]).query) == {
        "sessionToken": ["sess-tok-1"],
        "defaultNetwork": ["ethereum"],
    }


OPTIONS = {
    "payment_currencies": [
        {
            "id": "USD",
            "limits": [{"id": "CARD", "min": "2", "max": "500"}, {"id": "ACH", "min": "5", "max": "25000"}],
        }
    ],
    "purchase_currencies": [
        {
            "id": "2b92315d-eab7-5bef-84fa-089a131333f5",
            "name": "USD Coin",
            "symbol": "USDC",
            "icon_url": "https://x/usdc.png",
            "networks": [
                {
                    "name": "base",
                    "display_name": "Base",
                    "contract_address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
                    "chain_id": "8453",
                },
                {
                    "name": "ethereum",
                    "display_name": "Ethereum",
                    "contract_address": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
                    "chain_id": "1",
                },
            ],
        }
    ],
}


def test_options_are_mapped_to_the_contract_shape(api_client, vendor_a):
    def handler(request):
        _check_jwt(vendor_a, request, "GET", "/api/onramp/v1/buy/options")
        assert request.args.to_dict() == {"country": "US", "subdivision": "NY"}
        return Response(json.dumps(OPTIONS), content_type="application/json")

    vendor_a.expect_request("/api/onramp/v1/buy/options").respond_with_handler(handler)

    data = api_client.get(
        "/onramp/vendorA/options?country=us&subdivision=NY&chainIds=8453&payment_method=CARD"
    ).json()["data"]

    assert data["paymentCurrencies"] == [{"id": "USD", "limits": [{"id": "CARD", "min": "2", "max": "500"}]}]
    assert data["purchaseCurrencies"] == [
        {
            "id": "2b92315d-eab7-5bef-84fa-089a131333f5",
            "name": "USD Coin",
            "symbol": "USDC",
            "iconUrl": "https://x/usdc.png",
            "networks": [
                {
                    "name": "base",
                    "displayName": "Base",
                    "contractAddress": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
                    "chainId": "8453",
                    "display_name": "Base",
                    "contract_address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
                    "chain_id": "8453",
                }
            ],
        }
    ]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/onramp/vendorA/session-token", {"blockchains": ["base"]}, "destinationAddress"),
        ("/onramp/vendorA/session-token", {"destinationAddress": ADDRESS, "blockchains": []}, "blockchains"),
        ("/onramp/vendorA/direct-url", {"destinationAddress": ADDRESS}, "blockchains"),
        (
            "/onramp/vendorA/onramp-url",
            {"destinationAddress": ADDRESS, "blockchains": ["base"]},
            "presetFiatAmount",
        ),
    ],
)
def test_missing_fields_are_400_naming_the_field(api_client, vendor_a, path, body, field):
    response = api_client.post(path, body, format="json")
    assert response.status_code == 400
    assert response.json()["message"].startswith(field)
    assert len(vendor_a.log) == 0


def test_options_need_a_country(api_client, vendor_a):
    assert api_client.get("/onramp/vendorA/options").status_code == 400


def test_vendor_outage_is_502_after_retries_and_refusal_is_400(api_client, vendor_a, settings):
    settings.PROVIDER_MAX_RETRIES = 1
    vendor_a.expect_ordered_request("/api/onramp/v1/token").respond_with_response(Response("x", status=503))
    vendor_a.expect_ordered_request("/api/onramp/v1/token").respond_with_response(Response("x", status=503))
    body = {"destinationAddress": ADDRESS, "blockchains": ["base"]}
    assert api_client.post("/onramp/vendorA/session-token", body, format="json").status_code == 502
    assert len(vendor_a.log) == 2

    vendor_a.clear()
    vendor_a.expect_request("/api/onramp/v1/token").respond_with_json(
        {"message": "invalid address"}, status=400
    )
    response = api_client.post("/onramp/vendorA/session-token", body, format="json")
    assert response.status_code == 400
    assert response.json()["message"] == "vendorA refused the request: invalid address."
    assert len(vendor_a.log) == 1


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/onramp/vendorA/onramp-url"),
        ("post", "/onramp/vendorA/direct-url"),
        ("post", "/onramp/vendorA/session-token"),
        ("get", "/onramp/vendorA/options?country=US"),
    ],
)
def test_unconfigured_endpoints_are_503_naming_the_settings(api_client, method, path):
    body = {
        "presetFiatAmount": "25",
        "fiatCurrency": "USD",
        "defaultAsset": "USDC",
        "defaultPaymentMethod": "CARD",
        "destinationAddress": ADDRESS,
        "blockchains": ["base"],
        "country": "US",
        "orderId": "o",
        "redirectUrl": "https://a.example/",
    }
    response = (
        getattr(api_client, method)(path, body, format="json") if method == "post" else api_client.get(path)
    )
    assert response.status_code == 503
    assert "VENDOR_A_API_URL" in response.json()["message"]
    assert "VENDOR_A_PRIVATE_KEY" in response.json()["message"]


def test_order_with_vendor_a_gets_a_one_click_buy_url_to_its_deposit_address(api_client, tokens, vendor_a):
    seen = []
    vendor_a.expect_request("/api/onramp/v1/token").respond_with_handler(_token_handler(vendor_a, seen))
    onramp = {
        "vendor": "vendorA",
        "paymentMethod": "CARD",
        "country": "US",
        "redirectUrl": "https://shop.example/back",
    }

    response = api_client.post(
        "/orders", order_body(onramp=onramp), format="json", REMOTE_ADDR="198.51.100.23"
    )

    assert response.status_code == 200, response.json()
    data = response.json()["data"]
    query = {k: v[0] for k, v in parse_qs(urlsplit(data["oneClickBuyUrl"]).query).items()}
    assert query["partnerUserRef"] == data["id"]
    assert (query["defaultAsset"], query["defaultNetwork"], query["presetFiatAmount"]) == (
        "USDC",
        "base",
        "100.00",
    )
    assert seen[0]["addresses"] == [
        {
            "address": deposit_address(chain_id=8453, kind="order", identifier=data["id"], field="srcChain"),
            "blockchains": ["base"],
        }
    ]
    assert seen[0]["clientIp"] == "198.51.100.23"


def test_order_with_vendor_a_unconfigured_is_503_and_stores_nothing(api_client, tokens):
    onramp = {
        "vendor": "vendorA",
        "paymentMethod": "CARD",
        "country": "US",
        "redirectUrl": "https://shop.example/back",
    }
    response = api_client.post("/orders", order_body(onramp=onramp), format="json")
    assert response.status_code == 503
    assert not Order.objects.exists()
