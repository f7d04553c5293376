"""Reading chain state: ERC-20 balances over JSON-RPC, or an offline reader for development.

`CHAIN_READER` picks the adapter (`offline` or `rpc`, with `CHAIN_RPC_URLS`).
"""

from __future__ import annotations

import requests
from django.conf import settings

from core.errors import UpstreamError
from core.http_client import build_session


class ChainUnavailable(UpstreamError):
    """The chain's RPC could not answer (not configured, unreachable, or an error)."""


class OfflineChainReader:
    """Development chain reader: every balance is 0, so no whale discount applies."""

    name = "offline"

    def balance_of(self, *, chain_id: int, token: str, holder: str) -> int:
        return 0


class RpcChainReader:
    """ERC-20 balances over JSON-RPC `eth_call`, one RPC URL per chain from settings."""

    name = "rpc"
    BALANCE_OF = "0x70a08231"

    def __init__(self, rpc_urls: dict[int, str] | None = None):
        self.rpc_urls = settings.CHAIN_RPC_URLS if rpc_urls is None else rpc_urls
        self.session = build_session()  # eth_call reads state only

    def balance_of(self, *, chain_id: int, token: str, holder: str) -> int:
        url = self.rpc_urls.get(chain_id)
        if not url:
            raise ChainUnavailable(f"no RPC URL configured for chain {chain_id}")
        data = self.BALANCE_OF + holder[2:].lower().rjust(64, "0")
        payload = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "eth_call",
            "params": [{"to": token, "data": data}, "latest"],
        }
        try:
            response = self.session.post(
                url, json=payload, timeout=settings.PROVIDER_TIMEOUT_SECONDS, allow_redirects=False
            )
            response.raise_for_status()
            body = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise ChainUnavailable(f"RPC for chain {chain_id} failed: {exc.__class__.__name__}") from exc
        if "error" in body or not isinstance(body.get("result"), str):
            raise ChainUnavailable(f"RPC for chain {chain_id} returned an error")
        result = body["result"]
        return int(result, 16) if result not in ("0x", "") else 0


def get_chain_reader():
    if settings.CHAIN_READER == "rpc":
        return RpcChainReader()
    return OfflineChainReader()
