"""Request examples of the order interface, the same as the README's walkthrough (shown in /api/docs/)."""

from drf_spectacular.utils import OpenApiExample

USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDC_ARBITRUM = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"
RECIPIENT = "0x1111111111111111111111111111111111111111"

QUOTE = OpenApiExample(
    "Swap 100 USDC on Base to USDC on Arbitrum",
    request_only=True,
    value={
        "type": "swap",
        "srcChain": 8453,
        "dstChain": 42161,
        "tradeType": "EXACT_INPUT",
        "amount": "100000000",
        "srcTokenAddress": USDC_BASE,
        "dstTokenAddress": USDC_ARBITRUM,
        "recipientAddress": RECIPIENT,
    },
)


def _token(chain_id: int, address: str) -> dict:
    return {
        "chainId": chain_id,
        "address": address,
        "symbol": "USDC",
        "name": "USD Coin",
        "decimals": 6,
        "metadata": {},
    }


ORDER = OpenApiExample(
    "The order that pays that quote",
    request_only=True,
    value={
        "type": "swap",
        "recipientAddress": RECIPIENT,
        "srcChain": 8453,
        "dstChain": 42161,
        "srcTokenAddress": USDC_BASE,
        "dstTokenAddress": USDC_ARBITRUM,
        "srcAmount": "100000000",
        "payload": {"expectedDstAmount": "99000000"},
        "metadata": {"srcToken": _token(8453, USDC_BASE), "dstToken": _token(42161, USDC_ARBITRUM)},
        "creatorAddress": "0x2222222222222222222222222222222222222222",
    },
)
