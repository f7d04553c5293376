"""Reading chain state: ERC-20 balances over JSON-RPC, or an offline reader for development.

`CHAIN_READER` picks the adapter (`offline` or `rpc`, at the RPC URLs of the chain registry).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from eth_typing import BlockIdentifier, HexStr

from chains.client import web3_for
from chains.evm import to_checksum_address
from chains.registry import chain_get
from core.errors import UpstreamError

logger = logging.getLogger(__name__)


def receipt_on(chain_id: int, tx_hash: str):
    """The transaction's receipt on `chain_id`, or None while it is not there (or the chain does not answer)."""
    chain = chain_get(chain_id)
    if chain is None:
        return None
    try:
        return web3_for(chain).eth.get_transaction_receipt(HexStr(tx_hash))
    except Exception as exc:  # not mined yet, unknown, or no node answered: the next poll asks again
        logger.info("Receipt of %s on chain %s not available: %s", tx_hash, chain_id, exc.__class__.__name__)
        return None


def confirmed_receipt(chain_id: int, tx_hash: str):
    """The receipt once its block is the chain's `confirmations` deep, else None (what another party sent is
    counted only then)."""
    receipt = receipt_on(chain_id, tx_hash)
    chain = chain_get(chain_id)
    if receipt is None or chain is None:
        return None
    try:
        head = web3_for(chain).eth.block_number
    except Exception:  # no node answered: the next poll asks again
        return None
    return receipt if receipt["blockNumber"] <= chain.confirmed_through(head) else None


class ChainUnavailable(UpstreamError):
    """The chain's RPC could not answer (not configured, unreachable, or an error)."""


class OfflineChainReader:
    """Development chain reader: every balance is 0, so no whale discount applies."""

    name = "offline"

    def balance_of(self, *, chain_id: int, token: str, holder: str, block: BlockIdentifier = "latest") -> int:
        return 0


class RpcChainReader:
    """ERC-20 balances through web3.py (`balanceOf` by `eth_call`), at the registry's RPC URL of each chain."""

    name = "rpc"
    BALANCE_OF_ABI: list[dict[str, Any]] = [
        {
            "name": "balanceOf",
            "type": "function",
            "stateMutability": "view",
            "inputs": [{"name": "owner", "type": "address"}],
            "outputs": [{"name": "", "type": "uint256"}],
        },
    ]

    def balance_of(self, *, chain_id: int, token: str, holder: str, block: BlockIdentifier = "latest") -> int:
        chain = chain_get(chain_id)
        if chain is None or not chain.rpc_urls:
            raise ChainUnavailable(f"no RPC URL configured for chain {chain_id}")
        w3 = web3_for(chain)  # a timeout on every call, retries on connection failures
        contract = w3.eth.contract(address=to_checksum_address(token), abi=self.BALANCE_OF_ABI)
        try:
            return int(contract.functions.balanceOf(to_checksum_address(holder)).call(block_identifier=block))
        except Exception as exc:  # web3 raises its own errors, requests' and ValueError for bad answers
            raise ChainUnavailable(f"RPC for chain {chain_id} failed: {exc.__class__.__name__}") from exc


def get_chain_reader():
    if settings.CHAIN_READER == "rpc":
        return RpcChainReader()
    return OfflineChainReader()
