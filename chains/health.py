"""How each chain is doing, asked of its nodes now: what `manage.py chains check` prints and the admin shows.

A chain that takes payments is healthy when a node in its rotation answers for
the right chain id, its factory's code is the compiled artifact's, and its
watcher read recently. A signer's native balance below the chain's threshold is
a warning: transactions wait for gas, nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from web3 import Web3

from chains.client import NodeReport, probe
from chains.factory import factory_code_state
from chains.models import ChainCursor
from chains.registry import Chain
from chains.signers import signer_address


@dataclass
class ChainHealth:
    chain: Chain
    nodes: list[NodeReport]
    best_head: int | None = None
    factory: str = "none"  # ours | missing | different | none (no factory configured) | unknown
    balances: dict[str, int | None] = field(default_factory=dict)  # role: wei
    low: list[str] = field(default_factory=list)  # roles below their threshold
    watcher_lag: int | None = None
    watcher_age_seconds: float | None = None
    watcher_error: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems


def _stale_after(chain: Chain) -> float:
    return max(60.0, chain.poll_interval_seconds * 10)


def chain_health(chain: Chain) -> ChainHealth:
    """Asks every node of the chain (each directly, no failover), then the first good one for the rest."""
    reports = [probe(url) for url in chain.rpc_urls]
    health = ChainHealth(chain=chain, nodes=reports)
    good = [r for r in reports if r.reachable and r.chain_id == chain.chain_id]
    if not chain.rpc_urls:
        health.problems.append("no RPC URL")
    elif not good:
        health.problems.append("no RPC node answers for this chain id")
    health.best_head = max((r.head for r in good if r.head is not None), default=None)
    w3 = Web3(Web3.HTTPProvider(good[0].url, request_kwargs={"timeout": 10})) if good else None
    if chain.factory_address:
        health.factory = "unknown"
        if w3 is not None:
            try:
                health.factory = factory_code_state(w3, chain.factory_address)
            except Exception as exc:  # a node that fails here: reported, not raised
                health.problems.append(f"factory code unreadable ({exc.__class__.__name__})")
        if health.factory in ("missing", "different"):
            health.problems.append(f"factory {chain.factory_address}: code {health.factory}")
    elif chain.takes_payments:
        health.problems.append("takes payments but has no factory")
    if (
        chain.accepts_payments
        and settings.RELAY_PROVIDER == "relay"
        and chain.chain_id not in settings.RELAY_DEPOSITORIES
    ):
        health.problems.append(
            "RELAY_DEPOSITORIES pins no relay depository here: its ERC-20 orders would be refunded"
        )
    for role, threshold in (("vault", chain.vault_gas_threshold), ("solver", chain.solver_gas_threshold)):
        address = signer_address(role)
        if not address or w3 is None:
            continue
        try:
            balance = int(w3.eth.get_balance(Web3.to_checksum_address(address)))
        except Exception:
            balance = None
        health.balances[role] = balance
        if balance is not None and balance < threshold:
            health.low.append(role)
    cursor = ChainCursor.objects.filter(pk=chain.chain_id).first()
    if cursor is not None and cursor.last_scan_at is not None:
        health.watcher_age_seconds = (timezone.now() - cursor.last_scan_at).total_seconds()
        if health.best_head is not None and cursor.scanned_to >= 0:
            health.watcher_lag = max(0, chain.confirmed_through(health.best_head) - cursor.scanned_to)
    if chain.rpc_urls and (
        cursor is None
        or cursor.last_scan_at is None
        or timezone.now() - cursor.last_scan_at > timedelta(seconds=_stale_after(chain))
    ):
        health.problems.append("watcher has not scanned recently")
    health.watcher_error = cursor.last_error if cursor is not None else ""
    return health
