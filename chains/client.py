"""web3.py clients for the registry's chains: a timeout on every call, retries on connection failures."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import requests
from django.conf import settings
from web3 import Web3
from web3.providers.rpc.utils import ExceptionRetryConfiguration

from chains.registry import Chain


@lru_cache(maxsize=64)
def _client(rpc_url: str, timeout: float, retries: int) -> Web3:
    return Web3(
        Web3.HTTPProvider(
            rpc_url,
            request_kwargs={"timeout": timeout},
            exception_retry_configuration=ExceptionRetryConfiguration(
                errors=(requests.ConnectionError, requests.Timeout), retries=retries, backoff_factor=0.25
            ),
        )
    )


def web3_for(chain: Chain) -> Web3:
    if not chain.rpc_url:
        raise ValueError(f"{chain.name} has no RPC URL")
    return _client(chain.rpc_url, settings.PROVIDER_TIMEOUT_SECONDS, settings.PROVIDER_MAX_RETRIES)


def block_hashes(w3: Web3, numbers: list[int]) -> dict[int, str]:
    """The hashes of these blocks on the node's chain now, in one JSON-RPC batch (a missing block: absent)."""
    if not numbers:
        return {}
    with w3.batch_requests() as batch:
        for number in numbers:
            batch.add(w3.eth.get_block(number))
        blocks: list[Any] = list(batch.execute())
    return {
        number: block["hash"].to_0x_hex()
        for number, block in zip(numbers, blocks, strict=True)
        if block is not None
    }
