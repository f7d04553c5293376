"""web3.py clients for the registry's chains, over every RPC URL a chain has, in order of preference.

A chain's client tries its nodes in order. A node that refuses, times out,
answers 5xx, answers something that is not JSON-RPC, a JSON-RPC error that is
the node's fault (internal error, limit exceeded), or another chain id, or
that lags the best head by more than the chain's `max_lag_blocks` (checked
with the watcher's scans, `best_head`), is set aside for
RPC_SET_ASIDE_SECONDS and logged at WARNING; the next node answers instead. A
node set aside is still tried, last, when no other answers, so a chain whose
every node was down continues as soon as one is back.

What a node answers about the chain (a revert, "nonce too low") is an answer,
not a fault: it is returned as web3.py returns it. Nodes are named in logs and
the admin by scheme and host only: a provider's URL usually carries its key.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast
from urllib.parse import urlsplit

import requests
from django.conf import settings
from web3 import Web3
from web3.providers import JSONBaseProvider
from web3.providers.rpc import HTTPProvider
from web3.types import RPCEndpoint, RPCResponse

from chains.registry import Chain
from observability import metrics

logger = logging.getLogger(__name__)

# JSON-RPC error codes that say the node failed, not that the request is wrong: internal error, resource
# not found/unavailable, limit exceeded (EIP-1474).
NODE_FAULT_CODES = {-32603, -32002, -32005}


class ChainUnreachable(ConnectionError):
    """No RPC node of a chain answered."""


def node_label(url: str) -> str:
    """A node as logs and the admin show it: scheme and host, never the path or query (they hold keys)."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    more = "/…" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{parts.hostname}{port}{more}"


@dataclass
class NodeState:
    aside_until: float = 0.0
    reason: str = ""
    chain_id_ok: bool = False
    head: int | None = None


_nodes: dict[str, NodeState] = {}
_lock = threading.Lock()


def node_state(url: str) -> NodeState:
    with _lock:
        return _nodes.setdefault(url, NodeState())


def set_aside(chain: Chain | int, url: str, reason: str) -> None:
    """Keep `url` out of the chain's rotation for RPC_SET_ASIDE_SECONDS (logged once per setting aside)."""
    state = node_state(url)
    was_aside = state.aside_until > time.monotonic()
    state.aside_until = time.monotonic() + settings.RPC_SET_ASIDE_SECONDS
    state.reason, state.chain_id_ok = reason[:200], False
    if not was_aside:
        name = chain.name if isinstance(chain, Chain) else f"chain {chain}"
        logger.warning(
            "RPC node %s of %s set aside for %ss: %s",
            node_label(url),
            name,
            settings.RPC_SET_ASIDE_SECONDS,
            reason[:200],
        )


def is_aside(url: str) -> bool:
    return node_state(url).aside_until > time.monotonic()


def _ordered(urls: tuple[str, ...]) -> list[str]:
    """The nodes to try: those in rotation in order of preference, then those set aside (soonest back first)."""
    ready = [url for url in urls if not is_aside(url)]
    aside = sorted((url for url in urls if is_aside(url)), key=lambda url: node_state(url).aside_until)
    return ready + aside


def _fault(response: Any) -> str | None:
    """Why an answer is the node's failure, or None when it is an answer."""
    answers = response if isinstance(response, list) else [response]
    for answer in answers:
        if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0":
            return "its answer is not JSON-RPC"
        error = answer.get("error")
        if isinstance(error, dict) and error.get("code") in NODE_FAULT_CODES:
            return f"JSON-RPC error {error.get('code')}: {str(error.get('message'))[:120]}"
    return None


class FailoverProvider(JSONBaseProvider):
    """A JSON-RPC provider over a chain's nodes: each request goes to the first node that answers it."""

    def __init__(self, chain_id: int, urls: tuple[str, ...], timeout: float) -> None:
        super().__init__()
        self.chain_id, self.urls = chain_id, urls
        self._http = {url: _http(url, timeout) for url in urls}
        self._labels = {url: (str(chain_id), node_label(url)) for url in urls}  # the metrics' (no keys)

    def _node_checked(self, url: str) -> None:
        """A node's chain id, asked once while it stays in rotation: a node of another chain is set aside."""
        state = node_state(url)
        if state.chain_id_ok:
            return
        answer = self._http[url].make_request(RPCEndpoint("eth_chainId"), [])
        result = answer.get("result") if isinstance(answer, dict) else None
        try:
            reported = int(str(result), 16)
        except ValueError:
            raise _NodeFault(f"eth_chainId answered {str(result)[:40]!r}") from None
        if reported != self.chain_id:
            raise _NodeFault(f"it serves chain {reported}, not {self.chain_id}")
        state.chain_id_ok = True

    def _send(self, call) -> Any:
        failures = []
        for url in _ordered(self.urls):
            labels = self._labels[url]
            metrics.rpc_requests.labels(*labels).inc()
            try:
                self._node_checked(url)
                answer = call(self._http[url])
                fault = _fault(answer)
                if fault is None:
                    state = node_state(url)
                    if state.aside_until:
                        logger.warning(
                            "RPC node %s of chain %s answers again", node_label(url), self.chain_id
                        )
                        state.aside_until, state.reason = 0.0, ""
                    return answer
                raise _NodeFault(fault)
            except (requests.RequestException, OSError, ValueError, _NodeFault) as exc:
                reason = str(exc) if isinstance(exc, _NodeFault) else _transport_reason(exc)
                metrics.rpc_failures.labels(*labels).inc()
                set_aside(self.chain_id, url, reason)
                failures.append(f"{node_label(url)}: {reason}")
        raise ChainUnreachable(f"no RPC node of chain {self.chain_id} answered ({'; '.join(failures)})")

    def make_request(self, method: RPCEndpoint, params: Any) -> RPCResponse:
        return cast(RPCResponse, self._send(lambda http: http.make_request(method, params)))

    def make_batch_request(
        self, batch_requests: list[tuple[RPCEndpoint, Any]]
    ) -> list[RPCResponse] | RPCResponse:
        return self._send(lambda http: http.make_batch_request(batch_requests))

    def is_connected(self, show_traceback: bool = False) -> bool:
        return any(http.is_connected(show_traceback) for http in self._http.values())


class _NodeFault(Exception):
    pass


def _transport_reason(exc: BaseException) -> str:
    """Why a request failed, without the URL (requests puts it in its messages)."""
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, requests.ConnectionError | ConnectionError):
        return "connection refused or unreachable"
    if isinstance(exc, ValueError):
        return "its answer is not JSON"
    return exc.__class__.__name__


def node_session(url: str) -> requests.Session:
    """The HTTP session of one node's provider: the environment's proxy and CA settings for its URL, read once.

    A session that trusts the environment reads all of it again at every request (proxies, NO_PROXY, the CA
    bundle): about 6 ms of CPU per JSON-RPC request measured, an eighth of a settlement's CPU. The same
    settings are taken once here, for this URL, and the session stops reading them."""
    session = requests.Session()
    session.proxies = dict(requests.utils.get_environ_proxies(url))
    session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    session.trust_env = False
    return session


@lru_cache(maxsize=128)
def _http(url: str, timeout: float) -> HTTPProvider:
    """One provider (one session, its connections kept open) per node URL and timeout, per process."""
    return HTTPProvider(
        url,
        request_kwargs={"timeout": timeout},
        exception_retry_configuration=None,
        session=node_session(url),
    )


@lru_cache(maxsize=64)
def _client(chain_id: int, urls: tuple[str, ...], timeout: float) -> Web3:
    return Web3(FailoverProvider(chain_id, urls, timeout))


def web3_for(chain: Chain) -> Web3:
    if not chain.rpc_urls:
        raise ValueError(f"{chain.name} has no RPC URL")
    return _client(chain.chain_id, chain.rpc_urls, settings.PROVIDER_TIMEOUT_SECONDS)


@dataclass(frozen=True)
class NodeReport:
    url: str
    reachable: bool
    chain_id: int | None
    head: int | None
    error: str = ""

    @property
    def label(self) -> str:
        return node_label(self.url)


def probe(url: str, *, timeout: float | None = None) -> NodeReport:
    """One node's chain id and head, asked directly (no failover): for `chains check` and `best_head`."""
    http = _http(url, timeout or settings.PROVIDER_TIMEOUT_SECONDS)
    try:
        answers = http.make_batch_request(
            [(RPCEndpoint("eth_chainId"), []), (RPCEndpoint("eth_blockNumber"), [])]
        )
        if _fault(answers) or not isinstance(answers, list) or len(answers) != 2:
            raise _NodeFault(_fault(answers) or "its batch answer is not two JSON-RPC answers")
        chain_id, head = (int(str(answer.get("result")), 16) for answer in answers)
    except (requests.RequestException, OSError, ValueError, _NodeFault) as exc:
        reason = str(exc) if isinstance(exc, _NodeFault) else _transport_reason(exc)
        return NodeReport(url=url, reachable=False, chain_id=None, head=None, error=reason)
    return NodeReport(url=url, reachable=True, chain_id=chain_id, head=head)


def scan_node(chain: Chain) -> tuple[str, int, list[NodeReport]]:
    """The node one scan reads from, and its head: the first in order of preference that answers, serves the
    chain and is within `max_lag_blocks` of the best head of the nodes asked (asked together). The others
    that fail are set aside. ChainUnreachable when none answers.

    A scan reads everything from that one node, up to its own confirmed end (`Chain.confirmed_through`): it never reads a
    block the node does not have yet (an empty answer would look like no payment). With one node this is one
    request, as reading the head always was."""
    candidates = [url for url in chain.rpc_urls if not is_aside(url)] or list(chain.rpc_urls)
    reports = [probe(url) for url in candidates]
    for report in reports:
        if not report.reachable:
            set_aside(chain, report.url, report.error)
        elif report.chain_id != chain.chain_id:
            set_aside(chain, report.url, f"it serves chain {report.chain_id}, not {chain.chain_id}")
    good = [r for r in reports if r.reachable and r.chain_id == chain.chain_id and r.head is not None]
    if not good:
        raise ChainUnreachable(f"no RPC node of {chain.name} answered")
    best = max(cast(int, r.head) for r in good)
    chosen = None
    for report in good:
        behind = best - cast(int, report.head)
        if behind > chain.max_lag_blocks:
            set_aside(chain, report.url, f"{behind} blocks behind the best head {best}")
            continue
        state = node_state(report.url)
        if state.aside_until > time.monotonic():
            logger.warning("RPC node %s of %s answers again", report.label, chain.name)
        state.aside_until, state.reason, state.head = 0.0, "", report.head
        chosen = chosen or report
    assert chosen is not None  # the best node is never behind itself
    return chosen.url, cast(int, chosen.head), reports


def nodes_status(chain: Chain) -> list[dict[str, Any]]:
    """How this process last found each node of the chain, as the admin shows it (labels, not URLs)."""
    now = time.monotonic()
    status = []
    for url in chain.rpc_urls:
        state = node_state(url)
        aside = state.aside_until > now
        status.append(
            {
                "node": node_label(url),
                "state": "set aside" if aside else "in rotation",
                "head": state.head,
                "reason": state.reason if aside else "",
            }
        )
    return status


def web3_node(chain: Chain, url: str) -> Web3:
    """A client of one of the chain's nodes only (what one scan reads from)."""
    return _client(chain.chain_id, (url,), settings.PROVIDER_TIMEOUT_SECONDS)


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
