"""The fees the outbox signs with: the chain's market (read at most every MARKET_SECONDS, with the other reads of a
batch), capped by the chain's row, bumped for a transaction signed again."""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from typing import Any

from django.conf import settings
from web3 import Web3

from chains.models import OutboxTx
from chains.outbox.receipts import rpc_batch
from chains.registry import Chain

logger = logging.getLogger(__name__)


def fee_cap(chain: Chain) -> int:
    """The most the service pays per gas on the chain, in wei (the chain's cap, or OUTBOX_MAX_FEE_PER_GAS_GWEI)."""
    gwei = chain.max_fee_per_gas_gwei or settings.OUTBOX_MAX_FEE_PER_GAS_GWEI
    return int(Decimal(str(gwei)) * 10**9)


MARKET_SECONDS = 1.0


_markets: dict[int, tuple[float, int, int]] = {}


def _market(chain: Chain, w3: Web3, *, fresh: bool) -> tuple[int, int]:
    """(base fee of the latest block, the node's priority fee): read at most once a second per chain and
    process for first signatures (a burst signs dozens in the same block, and twice the base fee leaves room
    for six full blocks of rises); a fee bump reads them now."""
    now = time.monotonic()
    known = _markets.get(chain.chain_id)
    if not fresh and known is not None and now - known[0] < MARKET_SECONDS:
        return known[1], known[2]
    base = int(w3.eth.get_block("latest").get("baseFeePerGas") or 0)
    priority = int(w3.eth.max_priority_fee)
    _markets[chain.chain_id] = (now, base, priority)
    return base, priority


def batch_with_fees(
    chain: Chain, w3: Web3, calls: list[tuple[str, list[Any]]]
) -> tuple[list[dict[str, Any]], tuple[int, int]]:
    """The node's answers to `calls` (one JSON-RPC batch, `rpc_batch`) and the fees to sign with now; a market
    older than MARKET_SECONDS is read in the same batch (latest block, priority fee), not in two more requests."""
    known = _markets.get(chain.chain_id)
    if known is not None and time.monotonic() - known[0] < MARKET_SECONDS:
        answers = rpc_batch(w3, calls)
    else:
        answers = rpc_batch(
            w3, [*calls, ("eth_getBlockByNumber", ["latest", False]), ("eth_maxPriorityFeePerGas", [])]
        )
        block, priority = answers[-2].get("result"), answers[-1].get("result")
        if isinstance(block, dict) and isinstance(priority, str):  # else fees_for asks on its own
            base = int(block.get("baseFeePerGas") or "0x0", 16)
            _markets[chain.chain_id] = (time.monotonic(), base, int(priority, 16))
        answers = answers[:-2]
    fees = fees_for(chain, w3)
    assert fees is not None  # no bump asked for
    return answers, fees


def fees_for(chain: Chain, w3: Web3, *, bump_from: OutboxTx | None = None) -> tuple[int, int] | None:
    """(maxFeePerGas, maxPriorityFeePerGas) for now, never above the chain's cap; with `bump_from`, at least
    OUTBOX_FEE_BUMP_PERCENT over its fees, or None when it already pays the cap (no higher bid is allowed)."""
    cap = fee_cap(chain)
    base, priority = _market(chain, w3, fresh=bump_from is not None)
    max_fee = 2 * base + priority
    if bump_from is not None and bump_from.max_fee_per_gas is not None:
        if int(bump_from.max_fee_per_gas) >= cap:
            return None
        factor = 100 + settings.OUTBOX_FEE_BUMP_PERCENT
        priority = max(priority, -(-int(bump_from.max_priority_fee_per_gas or 0) * factor // 100), 1)
        max_fee = max(max_fee, -(-int(bump_from.max_fee_per_gas) * factor // 100), priority)
    max_fee = min(max_fee, cap)
    return max_fee, min(priority, max_fee)
