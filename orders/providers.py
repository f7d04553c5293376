"""Adapters for external pricing and chain data, chosen by settings.

- Quote providers: `RelayQuoteProvider` (a relay provider's HTTP quote API) and
  `OfflineQuoteProvider` (development: prices from the token registry).
- Chain readers (chains.readers): `RpcChainReader` (web3.py `balanceOf` at the registry's RPC URL) and
  `OfflineChainReader` (development: every balance is 0).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

import requests
from django.conf import settings

from chains.models import Token
from chains.tokens import token_get
from core.http_client import build_session
from orders.inputs import EXACT_INPUT

logger = logging.getLogger(__name__)


class ProviderUnavailable(Exception):
    """The provider could not be reached or answered with an error of its own (5xx, bad body)."""


class QuoteRejected(Exception):
    """The provider understood the request and refused it (no route, amount too small, ...)."""


@dataclass(frozen=True)
class QuoteRequest:
    user: str
    recipient: str
    origin_chain_id: int
    destination_chain_id: int
    origin_currency: str
    destination_currency: str
    amount: int
    trade_type: str
    refund_to: str | None = None  # where the provider refunds a failed fill (the vault's quotes name it)


def token_shape(token: Token) -> dict[str, Any]:
    return {
        "chainId": token.chain_id,
        "address": token.address,
        "symbol": token.symbol,
        "name": token.name,
        "decimals": token.decimals,
        "metadata": {"logoURI": token.logo_uri} if token.logo_uri else {},
    }


def _formatted(amount: int, decimals: int) -> str:
    value = Decimal(amount).scaleb(-decimals)
    text = format(value.normalize(), "f") if value else "0"
    return text


def _usd(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01")))


class OfflineQuoteProvider:
    """Development pricing from `Token.usd_price`; no network. Labelled `offline` wherever it shows."""

    name = "offline"

    def _token(self, chain_id: int, address: str) -> tuple[Token, Decimal]:
        token = token_get(chain_id=chain_id, address=address)
        if token is None or token.usd_price is None or token.usd_price <= 0:
            raise QuoteRejected(f"No reference price for token {address} on chain {chain_id}.")
        return token, token.usd_price

    def quote(self, request: QuoteRequest) -> dict[str, Any]:
        # Every quote says so in X-Quote-Provider and the admin's header: not worth a line each.
        logger.debug("OFFLINE quote provider: pricing from token-registry reference prices, not a market")
        token_in, price_in = self._token(request.origin_chain_id, request.origin_currency)
        token_out, price_out = self._token(request.destination_chain_id, request.destination_currency)
        if request.trade_type == EXACT_INPUT:
            amount_in = request.amount
            usd = Decimal(amount_in).scaleb(-token_in.decimals) * price_in
            amount_out = int(
                (usd / price_out).scaleb(token_out.decimals).to_integral_value(rounding=ROUND_FLOOR)
            )
        else:
            amount_out = request.amount
            usd = Decimal(amount_out).scaleb(-token_out.decimals) * price_out
            amount_in = int(
                (usd / price_in).scaleb(token_in.decimals).to_integral_value(rounding=ROUND_CEILING)
            )
        slippage_bps = settings.QUOTE_SLIPPAGE_BPS
        minimum_out = amount_out * (10_000 - slippage_bps) // 10_000
        slippage_percent = str(Decimal(slippage_bps) / 100)
        usd_out = Decimal(amount_out).scaleb(-token_out.decimals) * price_out
        return {
            "currencyIn": {
                "currency": token_shape(token_in),
                "amount": str(amount_in),
                "amountFormatted": _formatted(amount_in, token_in.decimals),
                "amountUsd": _usd(usd),
                "minimumAmount": str(amount_in),
            },
            "currencyOut": {
                "currency": token_shape(token_out),
                "amount": str(amount_out),
                "amountFormatted": _formatted(amount_out, token_out.decimals),
                "amountUsd": _usd(usd_out),
                "minimumAmount": str(minimum_out),
            },
            "totalImpact": {"usd": "0.00", "percent": "0"},
            "swapImpact": {"usd": "0.00", "percent": "0"},
            "rate": str((price_in / price_out).normalize()),
            "slippageTolerance": {
                "origin": {"usd": "0.00", "value": "0", "percent": "0"},
                "destination": {
                    "usd": _usd(usd_out - Decimal(minimum_out).scaleb(-token_out.decimals) * price_out),
                    "value": str(amount_out - minimum_out),
                    "percent": slippage_percent,
                },
            },
            "timeEstimate": 5 if request.origin_chain_id == request.destination_chain_id else 30,
        }


class RelayQuoteProvider:
    """A relay provider's quote API over HTTP: `POST {RELAY_API_URL}/quote/v2` (Relay documents `/quote` as
    deprecated)."""

    name = "relay"
    DETAIL_FIELDS = (
        "currencyIn",
        "currencyOut",
        "totalImpact",
        "swapImpact",
        "rate",
        "slippageTolerance",
        "timeEstimate",
    )

    def __init__(self, base_url: str | None = None, api_key: str | None = None):
        self.base_url = (base_url or settings.RELAY_API_URL).rstrip("/")
        self.api_key = settings.RELAY_API_KEY if api_key is None else api_key
        self.session = build_session()  # a quote has no side effects, so POST may be retried

    def quote(self, request: QuoteRequest) -> dict[str, Any]:
        body = {
            "user": request.user,
            "recipient": request.recipient,
            "originChainId": request.origin_chain_id,
            "destinationChainId": request.destination_chain_id,
            "originCurrency": request.origin_currency,
            "destinationCurrency": request.destination_currency,
            "amount": str(request.amount),
            "tradeType": request.trade_type,
        }
        if request.refund_to:
            body["refundTo"] = request.refund_to
        headers = {"x-api-key": self.api_key} if self.api_key else {}
        try:
            response = self.session.post(
                f"{self.base_url}/quote/v2",
                json=body,
                headers=headers,
                timeout=settings.PROVIDER_TIMEOUT_SECONDS,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise ProviderUnavailable(f"quote provider unreachable: {exc.__class__.__name__}") from exc
        if 400 <= response.status_code < 500 and response.status_code != 429:
            raise QuoteRejected(self._message(response) or "The quote provider refused this trade.")
        if response.status_code != 200:
            raise ProviderUnavailable(f"quote provider answered {response.status_code}")
        try:
            details = response.json()["details"]
            return {field: details[field] for field in self.DETAIL_FIELDS if field in details} | {
                "currencyIn": details["currencyIn"],
                "currencyOut": details["currencyOut"],
            }
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderUnavailable("quote provider answered without quote details") from exc

    @staticmethod
    def _message(response: requests.Response) -> str | None:
        try:
            message = response.json().get("message")
        except ValueError:
            return None
        return str(message)[:300] if message else None


def get_quote_provider():
    if settings.QUOTE_PROVIDER == "relay":
        return RelayQuoteProvider()
    return OfflineQuoteProvider()
