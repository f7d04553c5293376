"""Chains as rows: the CHAINS seed, the in-process registry and its invalidation, and `manage.py chains`."""

import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from web3 import Web3

from chains import registry
from chains.models import Chain as ChainRow
from chains.registry import chain_get, chains, chains_seed
from tests.devnets import running_anvil

pytestmark = pytest.mark.django_db

SEED = [
    {
        "chain_id": 8453,
        "name": "Base",
        "native_symbol": "ETH",
        "rpc_url": "https://base.example/KEY",
        "factory_address": "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    },
    {"chain_id": 10, "name": "OP Mainnet", "native_symbol": "ETH"},
]


def test_the_seed_is_imported_once_and_follows_its_own_rows_but_never_staffs(settings):
    settings.CHAINS = []
    ChainRow.objects.all().delete()

    assert chains_seed(SEED) == (2, 0)
    assert chains_seed(SEED) == (0, 0)  # idempotent: nothing written again
    base = ChainRow.objects.get(pk=8453)
    assert (base.source, base.rpc_urls, base.takes_payments) == ("seed", ["https://base.example/KEY"], True)

    ChainRow.objects.filter(pk=10).update(name="Optimism (staff)", source="staff")
    changed = [{**SEED[0], "confirmations": 20}, {**SEED[1], "name": "OP"}]
    assert chains_seed(changed) == (0, 1)
    assert ChainRow.objects.get(pk=8453).confirmations == 20  # the seed's own row follows it
    assert ChainRow.objects.get(pk=10).name == "Optimism (staff)"  # a staff row is left alone


def test_rpc_urls_are_encrypted_at_rest(settings):
    from django.db import connection

    settings.CHAINS = SEED
    assert chain_get(8453).rpc_urls == ("https://base.example/KEY",)
    with connection.cursor() as cursor:
        cursor.execute("SELECT rpc_urls FROM chains_chain WHERE chain_id = 8453")
        stored = cursor.fetchone()[0]
    assert "KEY" not in stored and "base.example" not in stored


def test_a_lookup_costs_no_query_and_another_processs_change_is_seen_within_a_second(
    settings, django_assert_num_queries, monkeypatch
):
    monkeypatch.setattr(registry, "REGISTRY_RECHECK_SECONDS", 1.0)  # the service's (the suite's is longer)
    settings.CHAINS = SEED
    assert chain_get(8453).confirmations == 12
    with django_assert_num_queries(0):
        for _ in range(1000):
            chain_get(8453)
            chains()

    # Another process's change: an UPDATE that sends no signal to this one.
    ChainRow.objects.filter(pk=8453).update(confirmations=30, updated_at=registry.timezone.now())
    deadline = time.monotonic() + 5
    while chain_get(8453).confirmations != 30 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert chain_get(8453).confirmations == 30

    row = ChainRow.objects.get(pk=8453)
    row.takes_payments = False
    row.save()  # this process's change: seen at once
    assert chain_get(8453).accepts_payments is False


def test_a_chain_that_stops_taking_payments_offers_no_deposit_address(settings, api_client, tokens):
    from tests.orders.conftest import order_body

    assert api_client.post("/orders", order_body(), format="json").status_code == 200
    call_command("chains", "disable", "8453")
    response = api_client.post("/orders", order_body(), format="json")
    assert (
        response.status_code == 400 and "payments are not taken on chain 8453" in response.json()["message"]
    )
    assert ChainRow.objects.get(pk=8453).source == "staff"  # the seed no longer turns it back on
    chains_seed()
    assert chain_get(8453).takes_payments is False


@pytest.fixture
def base_node():
    with running_anvil(8453) as url:
        yield url


def _rows():
    return list(ChainRow.objects.order_by("pk").values_list("pk", "updated_at"))


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["0", "--name", "Zero"], "chain_id must be an integer >= 1"),
        (["abc", "--name", "X"], "'abc' is not a chain id"),
        (["8454", "--name", "X", "--rpc-url", "{node}"], "serves chain 8453, not 8454"),
        (["8453", "--name", "X", "--rpc-url", "http://127.0.0.1:9"], "does not answer"),
        (["8453", "--name", "X", "--rpc-url", "ftp://node"], "not an http(s) URL"),
        (["8453", "--name", "X", "--rpc-url", "{node}", "--factory-address", "0x12"], "is not an address"),
        (["8453", "--name", "X", "--rpc-url", "{node}", "--factory-address", "{token}"], "code different"),
        (
            ["8453", "--name", "X", "--rpc-url", "{node}", "--factory-address", "0x" + "11" * 20],
            "code missing",
        ),
        (["8453", "--name", "X"], "give at least one --rpc-url"),
    ],
)
def test_chains_add_refuses_what_is_wrong_and_changes_nothing(settings, base_node, args, error):
    from chains.devnet import deploy_contract

    settings.CHAINS = []
    w3 = Web3(Web3.HTTPProvider(base_node))
    token = deploy_contract(
        w3, "TestToken", "T", "T", 6, w3.eth.accounts[0], sender=w3.eth.accounts[0]
    ).address
    before = _rows()
    args = [a.format(node=base_node, token=token) for a in args]
    with pytest.raises(CommandError, match=error.replace("(", r"\(").replace(")", r"\)")):
        call_command("chains", "add", *args)
    assert _rows() == before


def test_chains_add_list_and_check_a_chain_without_a_factory(settings, base_node, capsys):
    settings.CHAINS = []
    call_command(
        "chains",
        "add",
        "8453",
        "--name",
        "Base",
        "--rpc-url",
        base_node,
        "--confirmations",
        "2",
        "--poll-interval",
        "2",
    )
    assert "deploy its factory: manage.py chains deploy-factory 8453" in capsys.readouterr().out
    ChainRow.objects.filter(pk=8453).update(rpc_urls=[base_node, "http://127.0.0.1:9"])  # a node went away
    call_command("chains", "list")
    listed = capsys.readouterr().out
    assert "8453" in listed and "Base" in listed and "http://127.0.0.1:9" in listed

    with pytest.raises(CommandError, match="no chain takes payments"):
        call_command("chains", "check")
    table = capsys.readouterr().out
    assert "no (connection refused or unreachable)" in table
    assert "takes payments but has no factory" in table


def test_chains_check_passes_on_a_healthy_chain_and_fails_when_its_watcher_stops(devnet_registry, capsys):
    from chains.models import ChainCursor
    from chains.watcher import scan_chain

    chain, _ = devnet_registry
    scan_chain(chain.chain_id)
    call_command("chains", "check", str(chain.chain_id))  # no CommandError: exit status 0
    table = capsys.readouterr().out
    assert "ours" in table and " ok" in table and "ETH" in table

    ChainCursor.objects.filter(pk=chain.chain_id).update(
        last_scan_at=registry.timezone.now() - timedelta(hours=1)
    )
    with pytest.raises(CommandError, match="unhealthy: Devnet A"):
        call_command("chains", "check")
    assert "watcher has not scanned recently" in capsys.readouterr().out


def test_every_command_refuses_a_chain_it_does_not_know(settings):
    for action in ("check", "deploy-factory", "disable", "enable"):
        with pytest.raises(CommandError, match="chain 999 is not in the registry"):
            call_command("chains", action, "999")
        with pytest.raises(CommandError, match="'x1' is not a chain id"):
            call_command("chains", action, "x1")
