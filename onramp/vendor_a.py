"""vendorA adapter: session tokens, buy options and hosted buy URLs over HTTP.

Every API call carries a short-lived JWT (ES256 for an EC P-256 key, EdDSA for
an Ed25519 key) signed with the configured key, bound to the request's method,
host and path.
"""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django.conf import settings

from core.http_client import build_session
from onramp.errors import not_configured, vendor_json, vendor_unavailable

VENDOR = "vendorA"
REQUIRED_SETTINGS = ["VENDOR_A_API_URL", "VENDOR_A_PAY_URL", "VENDOR_A_KEY_ID", "VENDOR_A_PRIVATE_KEY"]


class VendorAClient:
    def __init__(self) -> None:
        missing = [name for name in REQUIRED_SETTINGS if not getattr(settings, name)]
        if missing:
            raise not_configured(VENDOR, missing)
        self.api_url = settings.VENDOR_A_API_URL.rstrip("/")
        self.pay_url = settings.VENDOR_A_PAY_URL.rstrip("/")
        self.key_id = settings.VENDOR_A_KEY_ID
        try:
            key = load_pem_private_key(settings.VENDOR_A_PRIVATE_KEY.encode(), password=None)
        except ValueError as exc:
            raise not_configured(
                VENDOR, ["VENDOR_A_PRIVATE_KEY (a PEM EC P-256 or Ed25519 private key)"]
            ) from exc
        if not isinstance(key, ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
            raise not_configured(VENDOR, ["VENDOR_A_PRIVATE_KEY (a PEM EC P-256 or Ed25519 private key)"])
        self.private_key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey = key
        self.algorithm = "ES256" if isinstance(key, ec.EllipticCurvePrivateKey) else "EdDSA"
        self.session = build_session()

    def bearer_token(self, method: str, url: str) -> str:
        parts = urlsplit(url)
        now = int(time.time())
        claims = {
            "sub": self.key_id,
            "iss": settings.VENDOR_A_JWT_ISSUER,
            "iat": now,
            "nbf": now,
            "exp": now + settings.VENDOR_A_JWT_TTL_SECONDS,
            "uri": f"{method} {parts.netloc}{parts.path}",
        }
        headers = {"kid": self.key_id, "nonce": secrets.token_hex(16), "typ": "JWT"}
        return jwt.encode(claims, self.private_key, algorithm=self.algorithm, headers=headers)

    def _call(self, method: str, path: str, *, params=None, json=None) -> dict[str, Any]:
        url = f"{self.api_url}{path}"
        data = vendor_json(
            VENDOR,
            lambda: self.session.request(
                method,
                url,
                params=params,
                json=json,
                headers={"Authorization": f"Bearer {self.bearer_token(method, url)}"},
                timeout=settings.PROVIDER_TIMEOUT_SECONDS,
                allow_redirects=False,
            ),
            lambda body: body.get("message") or body.get("errorMessage"),
        )
        if not isinstance(data, dict):
            raise vendor_unavailable(VENDOR)
        return data

    def session_token(
        self, *, destination_address: str, blockchains: list[str], assets: list[str] | None, client_ip: str
    ) -> dict:
        body: dict[str, Any] = {
            "addresses": [{"address": destination_address, "blockchains": blockchains}],
            "clientIp": client_ip,
        }
        if assets:
            body["assets"] = assets
        data = self._call("POST", "/onramp/v1/token", json=body)
        if not isinstance(data.get("token"), str):
            raise vendor_unavailable(VENDOR)
        return {"token": data["token"], "channelId": data.get("channel_id")}

    def buy_options(self, *, country: str, subdivision: str | None) -> dict:
        params = {"country": country, **({"subdivision": subdivision} if subdivision else {})}
        return self._call("GET", "/onramp/v1/buy/options", params=params)

    def hosted_url(self, *, session_token: str, **options: str | None) -> str:
        """`{pay}/buy/select-asset?sessionToken=...` plus the given options (None ones left out)."""
        query = {"sessionToken": session_token, **{k: v for k, v in options.items() if v not in (None, "")}}
        return f"{self.pay_url}/buy/select-asset?{urlencode(query)}"


def map_buy_options(
    raw: dict, *, chain_ids: list[str] | None = None, payment_method: str | None = None
) -> dict:
    """The vendor's snake_case options in the contract's shape (camelCase plus the snake_case duplicates)."""
    payment = []
    for currency in raw.get("payment_currencies") or []:
        limits = [
            {
                "id": str(limit.get("id", "")),
                "min": str(limit.get("min", "")),
                "max": str(limit.get("max", "")),
            }
            for limit in currency.get("limits") or []
            if payment_method is None or limit.get("id") == payment_method
        ]
        payment.append({"id": str(currency.get("id", "")), "limits": limits})
    purchase = []
    for currency in raw.get("purchase_currencies") or []:
        networks = []
        for network in currency.get("networks") or []:
            chain_id = str(network.get("chain_id", ""))
            if chain_ids and chain_id not in chain_ids:
                continue
            display, contract = str(network.get("display_name", "")), str(network.get("contract_address", ""))
            networks.append(
                {
                    "name": str(network.get("name", "")),
                    "displayName": display,
                    "contractAddress": contract,
                    "chainId": chain_id,
                    "display_name": display,
                    "contract_address": contract,
                    "chain_id": chain_id,
                }
            )
        if chain_ids and not networks:
            continue
        purchase.append(
            {
                "id": str(currency.get("id", "")),
                "name": str(currency.get("name", "")),
                "symbol": str(currency.get("symbol", "")),
                "iconUrl": str(currency.get("icon_url", "")),
                "networks": networks,
            }
        )
    return {"paymentCurrencies": payment, "purchaseCurrencies": purchase}
