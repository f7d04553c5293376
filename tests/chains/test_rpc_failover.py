"""RPC failover on a real anvil node behind stand-in nodes that fail on purpose: the watcher never skips nor
reads a block twice across a switch, and a chain whose every node was down continues when one is back."""

import dataclasses
import logging
import secrets
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from web3 import Web3

from chains import client
from chains.models import ChainCursor, Deposit, WatchedAddress
from chains.watcher import scan_chain, watch_address
from tests.devnets import running_anvil
from tests.rpc_proxy import rpc_proxies

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_node_states():
    client._nodes.clear()
    client._client.cache_clear()
    client._http.cache_clear()
    yield
    client._nodes.clear()
    client._client.cache_clear()
    client._http.cache_clear()


@pytest.fixture
def chain_behind_proxies(devnet_registry, settings):
    """Devnet A reached through two stand-in nodes (the same anvil behind both), in order of preference."""
    chain, deployment = devnet_registry
    with rpc_proxies(chain.rpc_url) as proxies:
        settings.CHAINS = [dataclasses.asdict(chain) | {"rpc_urls": [p.url for p in proxies]}]
        yield chain, proxies, deployment


def _watched(chain) -> str:
    address = Web3.to_checksum_address("0x" + secrets.token_hex(20))
    watch_address(
        chain_id=chain.chain_id,
        address=address,
        owner="test:failover",
        watch_until=timezone.now() + timedelta(hours=1),
    )
    return address


def _pay(chain, to: str, wei: int) -> str:
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    tx = w3.eth.send_transaction({"from": w3.eth.accounts[3], "to": to, "value": wei})
    w3.eth.wait_for_transaction_receipt(tx)
    w3.provider.make_request("evm_mine", [])  # one confirmation
    return tx.to_0x_hex()


def _scanned(chain_id):
    return ChainCursor.objects.get(pk=chain_id)


def test_the_primary_node_going_down_only_moves_the_scan_to_the_next(chain_behind_proxies, caplog):
    chain, (primary, fallback), _ = chain_behind_proxies
    to = _watched(chain)
    first = _pay(chain, to, 1_000)
    scan_chain(chain.chain_id)
    assert primary.requests > 0 and fallback.requests <= 2  # a scan reads its preferred node
    cursor = _scanned(chain.chain_id)

    primary.stop()
    second = _pay(chain, to, 2_000)
    with caplog.at_level(logging.WARNING, logger="chains.client"):
        result = scan_chain(chain.chain_id)
    assert result is not None and result.scanned_from == cursor.scanned_to + 1  # no block skipped
    assert "set aside" in caplog.text and "connection refused" in caplog.text
    assert primary.url.split("//")[1] in caplog.text
    deposits = Deposit.objects.filter(to_address=to).order_by("block_number")
    assert [(d.tx_hash, d.amount) for d in deposits] == [(first, "1000"), (second, "2000")]  # each once

    # The other clients of the chain (the outbox's, the readers') fail over too.
    assert client.web3_for(_chain(chain.chain_id)).eth.block_number > 0


def _chain(chain_id):
    from chains.registry import chain_get

    return chain_get(chain_id)


@pytest.mark.parametrize("failure", ["500", "garbage", "internal_error", "wrong_chain", "lag"])
def test_a_node_that_fails_is_set_aside_and_the_next_answers(chain_behind_proxies, caplog, failure):
    chain, (primary, fallback), _ = chain_behind_proxies
    if failure == "wrong_chain":
        primary.chain_id = 1
    elif failure == "lag":
        primary.lag = 50
    else:
        primary.mode = failure
    to = _watched(chain)
    paid = _pay(chain, to, 3_000)
    with caplog.at_level(logging.WARNING, logger="chains.client"):
        result = scan_chain(chain.chain_id)
    assert result is not None
    assert Deposit.objects.filter(tx_hash=paid).count() == 1
    reason = {
        "500": "HTTP 500",
        "garbage": "not JSON",
        "internal_error": "-32603",
        "wrong_chain": "serves chain 1",
        "lag": "blocks behind the best head",
    }[failure]
    assert reason in caplog.text
    assert client.is_aside(primary.url) and not client.is_aside(fallback.url)
    nodes = _scanned(chain.chain_id).nodes
    assert [n["state"] for n in nodes] == ["set aside", "in rotation"]
    assert "127.0.0.1" in nodes[0]["node"]


def test_a_revert_is_an_answer_not_a_failing_node(chain_behind_proxies):
    from web3.exceptions import ContractLogicError

    chain, (primary, _), deployment = chain_behind_proxies
    w3 = client.web3_for(_chain(chain.chain_id))
    with pytest.raises(ContractLogicError):
        w3.eth.call({"to": deployment["contracts"]["AlwaysReverts"], "data": "0x12345678"})
    assert not client.is_aside(primary.url) and primary.requests > 0


def test_every_node_down_shows_and_the_chain_continues_from_its_cursor_when_one_is_back(
    chain_behind_proxies, staff
):
    chain, (primary, fallback), _ = chain_behind_proxies
    to = _watched(chain)
    scan_chain(chain.chain_id)
    before = _scanned(chain.chain_id).scanned_to
    primary.mode = fallback.mode = "500"
    paid = _pay(chain, to, 4_000)  # while every node is down

    assert scan_chain(chain.chain_id) is None
    cursor = _scanned(chain.chain_id)
    assert cursor.scanned_to == before and "no RPC node of Devnet A answered" in cursor.last_error
    response = staff.get("/admin/chains/chain/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "every RPC node is down" in page

    fallback.mode = "pass"
    time.sleep(0.1)
    result = scan_chain(chain.chain_id)
    assert result is not None and result.scanned_from == before + 1
    assert Deposit.objects.filter(tx_hash=paid).count() == 1


def test_a_node_of_another_chain_listed_first_is_never_read(devnet_registry, settings):
    chain, _ = devnet_registry
    with running_anvil(1) as mainnet_node:
        settings.CHAINS = [dataclasses.asdict(chain) | {"rpc_urls": [mainnet_node, chain.rpc_url]}]
        to = _watched(chain)
        paid = _pay(chain, to, 5_000)
        assert scan_chain(chain.chain_id) is not None
        assert Deposit.objects.filter(tx_hash=paid).count() == 1
        assert client.is_aside(mainnet_node)
        assert WatchedAddress.objects.filter(address=to).exists()


def test_a_nodes_proxy_is_the_one_the_environment_names_for_its_url(monkeypatch, httpserver):
    """The environment's proxy settings are read once per node (not at every request, which cost 6 ms of CPU
    each), and still honoured: a node reached only through the proxy answers through it, and a node NO_PROXY
    names is reached directly."""
    httpserver.expect_request("/", method="POST").respond_with_json(
        [{"jsonrpc": "2.0", "id": 0, "result": "0x2105"}, {"jsonrpc": "2.0", "id": 1, "result": "0x10"}]
    )
    monkeypatch.setenv("HTTP_PROXY", httpserver.url_for("/").rstrip("/"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    proxied = client.probe("http://rpc.node.invalid:8545")

    assert (proxied.reachable, proxied.chain_id, proxied.head) == (True, 8453, 16)
    assert len(httpserver.log) == 1
    monkeypatch.setenv("NO_PROXY", "other.node.invalid")
    direct = client.probe("http://other.node.invalid:8545")
    assert not direct.reachable and len(httpserver.log) == 1  # no such host: not through the proxy
