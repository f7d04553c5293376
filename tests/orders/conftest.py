import copy

import pytest

USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
ETH = "0x0000000000000000000000000000000000000000"
USDC_ARB = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"
RECIPIENT = "0x1111111111111111111111111111111111111111"
CREATOR = "0x2222222222222222222222222222222222222222"
CONTRACT = "0x3333333333333333333333333333333333333333"

SRC_TOKEN = {
    "chainId": 8453,
    "address": USDC_BASE,
    "symbol": "USDC",
    "name": "USD Coin",
    "decimals": 6,
    "metadata": {},
}
DST_TOKEN = {
    "chainId": 42161,
    "address": USDC_ARB,
    "symbol": "USDC",
    "name": "USD Coin",
    "decimals": 6,
    "metadata": {},
}

PAYLOADS = {
    "swap": {"expectedDstAmount": "99000000"},
    "x402_swap": {"expectedDstAmount": "99000000"},
    "duel": {"expectedDstAmount": "99000000"},
    "custom": {"data": "0xdeadbeef", "to": CONTRACT, "amount": "5000000"},
    "custom_exact_in": {
        "amount": "5000000",
        "expectedDstAmount": "4900000",
        "functionAbi": '[{"type":"function","name":"deposit","inputs":[]}]',
        "functionName": "deposit",
        "functionArgs": ["{{amount}}"],
        "to": CONTRACT,
    },
    "mint_nft": {"contractAddress": CONTRACT, "tokenId": 7, "contractType": "erc721", "nftPrice": "5000000"},
    "join_tournament": {"contractAddress": CONTRACT, "entryPrice": "5000000"},
    "fund_tournament": {"contractAddress": CONTRACT, "fundAmount": "5000000"},
}


def order_body(order_type="swap", **overrides):
    body = {
        "type": order_type,
        "recipientAddress": RECIPIENT,
        "srcChain": 8453,
        "dstChain": 42161,
        "srcTokenAddress": USDC_BASE,
        "dstTokenAddress": USDC_ARB,
        "srcAmount": "100000000",
        "payload": copy.deepcopy(PAYLOADS[order_type]),
        "metadata": {"srcToken": dict(SRC_TOKEN), "dstToken": dict(DST_TOKEN)},
        "creatorAddress": CREATOR,
    }
    if order_type == "mint_nft":
        body["metadata"]["nft"] = {"name": "Pass #7", "imageUrl": "https://example.com/7.png"}
    body.update(overrides)
    return body


EMAIL_FIELD = {"fields": [{"id": "email", "type": "email", "label": "Email", "required": True}]}


def poster_link(admin_client, **fields) -> dict:
    """A 4 USDC link on Base (through the API), with `fields` over the defaults."""
    response = admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Poster",
            "amount": "4000000",
            "token_address": USDC_BASE,
            "chain_id": 8453,
            "recipient_address": RECIPIENT,
            **fields,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def relay(devnets_registry, httpserver, settings):
    """The relay provider is a local HTTP server (what it answers is the test's), on the two devnets."""
    settings.RELAY_PROVIDER = "relay"
    settings.RELAY_API_URL = httpserver.url_for("")
    settings.RELAY_API_KEY = "relay-key"
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    settings.REFUND_RETRY_SECONDS = 0
    return httpserver


@pytest.fixture
def standin(relay, devnets_registry, settings):
    """The relay provider's stand-in between Devnet A (deposits) and Devnet B (fills), its depository on A
    pinned as in production (tests/orders/relay_standin.py)."""
    from tests.orders.devnet_checkout import w3_of
    from tests.orders.relay_standin import RelayStandIn

    a, b = devnets_registry
    standin = RelayStandIn(origin=w3_of(a), destination=w3_of(b)).serve(relay)
    settings.RELAY_DEPOSITORIES = {31337: standin.depository.address.lower()}
    return standin
