import json

import pytest
from werkzeug import Response

from chains.readers import ChainUnavailable, OfflineChainReader, RpcChainReader
from chains.tokens import tokens_forget
from tests.orders.conftest import CONTRACT, ETH, RECIPIENT, USDC_ARB, USDC_BASE

pytestmark = pytest.mark.django_db

COMMON = {"srcChain": 8453, "dstChain": 42161, "srcTokenAddress": USDC_BASE, "dstTokenAddress": USDC_ARB}
VARIANTS = {
    "swap": {"tradeType": "EXACT_INPUT", "amount": "100000000"},
    "x402_swap": {"amount": "100000000"},
    "duel": {"amount": "100000000"},
    "custom_exact_in": {"amount": "100000000"},
    "custom": {"payload": {"data": "0x", "to": CONTRACT, "amount": "100000000"}},
    "mint_nft": {
        "contractAddress": CONTRACT,
        "tokenId": None,
        "contractType": "erc1155",
        "price": "100000000",
    },
    "join_tournament": {"contractAddress": CONTRACT, "price": "100000000"},
    "fund_tournament": {"contractAddress": CONTRACT, "fundAmount": "100000000"},
}


def _quote(client, order_type, **extra):
    body = {"type": order_type, **COMMON, **VARIANTS[order_type], **extra}
    return client.post("/orders/quote", body, format="json")


@pytest.mark.parametrize("order_type", list(VARIANTS))
def test_every_variant_is_quoted_with_a_standard_fee(api_client, tokens, order_type):
    response = _quote(api_client, order_type, recipientAddress=RECIPIENT)

    assert response.status_code == 200, response.json()
    assert response["X-Quote-Provider"] == "offline"
    data = response.json()["data"]
    assert data["fee"] == {
        "type": "standard_fee",
        "feeVersion": 1,
        "tokenToCheckBalance": "0xB3B32F9f8827D4634fE7d973Fa1034Ec9fdDB3B3",
        "recipientBalance": "0",
        "serviceFeeBps": 80,
        "serviceWhaleDiscountBps": 0,
        "servicePartnerDiscountBps": 0,
        "finalFeeBps": 80,
    }
    assert data["currencyIn"]["currency"]["symbol"] == "USDC"
    assert data["pointsAmount"] >= 100
    assert data["pointsMultiplier"] == 1
    assert data["operation"] == (
        "execute"
        if order_type in {"custom", "custom_exact_in", "mint_nft", "join_tournament", "fund_tournament"}
        else "bridge"
    )


def test_exact_output_adds_the_fee_to_what_the_payer_sends(api_client, tokens):
    data = _quote(api_client, "x402_swap").json()["data"]
    assert data["currencyOut"]["amount"] == "100000000"
    assert data["currencyIn"]["amount"] == str(100_000_000 + 100_000_000 * 80 // 10_000)
    assert data["currencyIn"]["amountUsd"] == "100.80"
    # The fee is the whole impact: 100 out for 100.80 in.
    assert data["totalImpact"] == {"usd": "-0.80", "percent": "-0.79"}
    assert data["rate"] == "0.992063492063492063"
    assert data["swapImpact"] == {"usd": "0.00", "percent": "0"}


def test_exact_input_takes_the_fee_from_what_arrives(api_client, tokens):
    data = _quote(api_client, "swap").json()["data"]
    assert data["currencyIn"]["amount"] == "100000000"
    assert data["currencyOut"]["amount"] == str(100_000_000 - 800_000)
    assert data["currencyOut"]["amountFormatted"] == "99.2"
    assert data["totalImpact"] == {"usd": "-0.80", "percent": "-0.80"}
    assert data["rate"] == "0.992"


def test_card_vendor_gets_the_card_fee_structure(api_client, tokens):
    data = _quote(api_client, "x402_swap", onrampVendor="vendorB-web2").json()["data"]
    fee = data["fee"]
    assert fee["type"] == "vendorBweb2_fee"
    assert (fee["vendorBFeeBps"], fee["vendorBFeeUsd"], fee["serviceFeeBps"]) == (540, 0.3, 80)
    assert fee["finalFeeBps"] == 620
    assert fee["originalAmount"] == "100000000"
    # 100 USDC * (1 - 6.2%) - $0.30
    assert fee["finalAmount"] == str(100_000_000 * 9380 // 10000 - 300_000)


@pytest.mark.parametrize(
    ("order_type", "change", "field"),
    [
        ("swap", {"tradeType": "SOMETIMES"}, "tradeType"),
        ("swap", {"amount": "1.5"}, "amount"),
        ("mint_nft", {"contractType": "erc20"}, "contractType"),
        ("custom", {"payload": {"data": "0x", "to": CONTRACT}}, "payload.amount"),
        ("fund_tournament", {"srcChain": 12345}, "srcChain"),
        ("duel", {"onrampVendor": "cash"}, "onrampVendor"),
    ],
)
def test_bad_quote_requests_are_400_naming_the_field(api_client, tokens, order_type, change, field):
    response = _quote(api_client, order_type, **change)
    assert response.status_code == 400
    assert response.json()["message"].startswith(field), response.json()["message"]


def test_unknown_type_and_unknown_or_unpriced_tokens_are_400(api_client, tokens):
    from chains.models import Token

    assert api_client.post("/orders/quote", {"type": "lottery"}, format="json").status_code == 400
    unknown = _quote(api_client, "swap", dstTokenAddress="0x" + "7" * 40)
    assert unknown.status_code == 400
    assert unknown.json()["message"] == (
        f"dstTokenAddress: {'0x' + '7' * 40} is not a token this service knows on chain 42161."
    )
    Token.objects.filter(chain_id=42161, address=USDC_ARB).update(usd_price=None)
    tokens_forget()  # an update() sends no signal; another process would see it within TOKEN_CACHE_SECONDS
    unpriced = _quote(api_client, "swap")
    assert unpriced.status_code == 400
    assert "No quote for this trade" in unpriced.json()["message"]


# --- the relay provider over HTTP ---------------------------------------------------

RELAY_DETAILS = {
    "operation": "swap",
    "currencyIn": {
        "currency": {
            "chainId": 8453,
            "address": USDC_BASE,
            "symbol": "USDC",
            "name": "USD Coin",
            "decimals": 6,
            "metadata": {"logoURI": "https://x/usdc.png"},
        },
        "amount": "1000000000",
        "amountFormatted": "1000.0",
        "amountUsd": "1000.00",
        "minimumAmount": "1000000000",
    },
    "currencyOut": {
        "currency": {
            "chainId": 42161,
            "address": ETH,
            "symbol": "ETH",
            "name": "Ether",
            "decimals": 18,
            "metadata": {},
        },
        "amount": "300000000000000000",
        "amountFormatted": "0.3",
        "amountUsd": "990.00",
        "minimumAmount": "298500000000000000",
    },
    "totalImpact": {"usd": "-10.00", "percent": "-1.00"},
    "swapImpact": {"usd": "-2.00", "percent": "-0.20"},
    "rate": "0.0003",
    "slippageTolerance": {
        "origin": {"usd": "0", "value": "0", "percent": "0"},
        "destination": {"usd": "4.95", "value": "1500000000000000", "percent": "0.5"},
    },
    "timeEstimate": 12,
}


@pytest.fixture
def relay(httpserver, settings):
    settings.QUOTE_PROVIDER = "relay"
    settings.RELAY_QUOTE_USER = "0x" + "0" * 40
    settings.RELAY_API_URL = httpserver.url_for("")
    settings.RELAY_API_KEY = "relay-test-key"
    settings.PROVIDER_MAX_RETRIES = 2
    return httpserver


def test_relay_provider_is_sent_the_trade_and_its_details_are_returned(api_client, tokens, relay):
    relay.expect_request(
        "/quote/v2",
        method="POST",
        headers={"x-api-key": "relay-test-key"},
        json={
            "user": "0x" + "0" * 40,
            "recipient": RECIPIENT,
            "originChainId": 8453,
            "destinationChainId": 42161,
            "originCurrency": USDC_BASE,
            "destinationCurrency": ETH,
            "amount": "1000000000",
            "tradeType": "EXACT_INPUT",
        },
    ).respond_with_json({"steps": [], "fees": {}, "details": RELAY_DETAILS})

    response = _quote(
        api_client, "swap", dstTokenAddress=ETH, amount="1000000000", recipientAddress=RECIPIENT
    )

    assert response.status_code == 200, response.json()
    assert response["X-Quote-Provider"] == "relay"
    data = response.json()["data"]
    # The provider's figures, after the service's 60 bps: 0.2982 ETH worth $984.06 for $1,000.
    assert data["rate"] == "0.0002982"
    assert data["totalImpact"] == {"usd": "-15.94", "percent": "-1.59"}
    assert data["swapImpact"] == RELAY_DETAILS["swapImpact"]
    assert data["timeEstimate"] == 12
    assert data["fee"]["serviceFeeBps"] == 60  # $1,000 is in the < $5,000 tier
    assert data["currencyOut"]["amount"] == str(300000000000000000 - 300000000000000000 * 60 // 10_000)
    assert data["pointsAmount"] == 1000
    relay.check_assertions()


def test_relay_5xx_is_retried_then_succeeds(api_client, tokens, relay):
    relay.expect_ordered_request("/quote/v2", method="POST").respond_with_response(
        Response("busy", status=503)
    )
    relay.expect_ordered_request("/quote/v2", method="POST").respond_with_json({"details": RELAY_DETAILS})
    response = _quote(api_client, "swap", dstTokenAddress=ETH, amount="1000000000")
    assert response.status_code == 200
    assert len(relay.log) == 2


def test_relay_that_keeps_failing_is_502(api_client, tokens, relay):
    relay.expect_request("/quote/v2").respond_with_response(Response("down", status=500))
    response = _quote(api_client, "swap", dstTokenAddress=ETH, amount="1000000000")
    assert response.status_code == 502
    assert response.json()["message"] == "The pricing service is unavailable; retry shortly."
    assert len(relay.log) == 3  # the first try and two retries


def test_relay_refusal_is_400_with_its_reason_and_not_retried(api_client, tokens, relay):
    relay.expect_request("/quote/v2").respond_with_json({"message": "Amount is too low"}, status=400)
    response = _quote(api_client, "swap", dstTokenAddress=ETH, amount="1")
    assert response.status_code == 400
    assert response.json()["message"] == "No quote for this trade: Amount is too low"
    assert len(relay.log) == 1


def test_relay_answer_without_details_is_502(api_client, tokens, relay):
    relay.expect_request("/quote/v2").respond_with_json({"unexpected": True})
    assert _quote(api_client, "swap", dstTokenAddress=ETH, amount="1000").status_code == 502


# --- the discount-token balance over JSON-RPC -------------------------------------------


def _rpc_handler(balance: int):
    def handler(request):
        body = json.loads(request.data)
        if body["method"] == "eth_chainId":  # web3.py asks before its first call
            return Response(json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": hex(8453)}))
        assert body["method"] == "eth_call", body
        call = body["params"][0]
        assert call["to"] == "0xB3B32F9f8827D4634fE7d973Fa1034Ec9fdDB3B3"
        assert call["data"] == "0x70a08231" + RECIPIENT[2:].rjust(64, "0")
        return Response(
            json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": "0x" + format(balance, "064x")}),
            content_type="application/json",
        )

    return handler


def _rpc_at(settings, chain_id, url):
    settings.CHAINS = [{**c, "rpc_url": url} if c["chain_id"] == chain_id else c for c in settings.CHAINS]


def test_whale_recipient_gets_the_discount_from_the_chain(api_client, tokens, httpserver, settings):
    settings.CHAIN_READER = "rpc"
    _rpc_at(settings, 8453, httpserver.url_for("/rpc"))
    httpserver.expect_request("/rpc", method="POST").respond_with_handler(_rpc_handler(600_000 * 10**18))

    fee = _quote(api_client, "x402_swap", recipientAddress=RECIPIENT).json()["data"]["fee"]

    assert fee["recipientBalance"] == str(600_000 * 10**18)
    assert fee["serviceWhaleDiscountBps"] == 7500
    assert fee["finalFeeBps"] == 80 * 2500 // 10000


def test_rpc_failure_means_no_discount_not_no_quote(api_client, tokens, httpserver, settings):
    settings.CHAIN_READER = "rpc"
    _rpc_at(settings, 8453, httpserver.url_for("/rpc"))
    settings.PROVIDER_MAX_RETRIES = 0
    httpserver.expect_request("/rpc").respond_with_json(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000}}
    )
    response = _quote(api_client, "x402_swap", recipientAddress=RECIPIENT)
    assert response.status_code == 200
    assert response.json()["data"]["fee"]["recipientBalance"] == "0"


def test_chain_readers():
    assert OfflineChainReader().balance_of(chain_id=1, token=USDC_BASE, holder=RECIPIENT) == 0
    with pytest.raises(ChainUnavailable):
        RpcChainReader().balance_of(chain_id=1, token=USDC_BASE, holder=RECIPIENT)  # no RPC URL for chain 1
