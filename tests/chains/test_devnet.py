"""What `make run` deploys on a devnet, on a real anvil node."""

import pytest
from django.conf import settings
from web3 import Web3

from chains.artifacts import artifact
from chains.devnet import MINT_WHOLE_UNITS, DevnetError, deploy, token_list

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def deployed(devnet):
    return devnet


def test_the_contracts_and_tokens_are_deployed_where_every_fresh_start_puts_them(deployed):
    chain, deployment = deployed
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    contracts = deployment["contracts"]
    assert contracts["DepositFactory"] == settings.DEVNET_FACTORY_ADDRESS
    assert set(contracts) == {
        "DepositFactory",
        "dUSDC",
        "dWETH",
        "BalanceReader",
        "PricedNFT721",
        "PricedNFT1155",
        "Tournament",
        "AlwaysReverts",
    }
    assert all(w3.eth.get_code(address) for address in contracts.values())
    factory = w3.eth.contract(address=contracts["DepositFactory"], abi=artifact("DepositFactory")["abi"])
    assert factory.functions.owner().call() == w3.eth.accounts[0]


def test_payers_and_the_solver_hold_a_million_of_each_token_and_the_vault_none(deployed):
    chain, deployment = deployed
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    reader = w3.eth.contract(
        address=deployment["contracts"]["BalanceReader"], abi=artifact("BalanceReader")["abi"]
    )
    accounts = w3.eth.accounts
    usdc = reader.functions.balancesOf(deployment["contracts"]["dUSDC"], accounts).call()
    weth = reader.functions.balancesOf(deployment["contracts"]["dWETH"], accounts).call()
    # Accounts 1-8 pay; account 9, the devnet solver, delivers from this inventory; the vault starts empty.
    assert usdc == [0] + [MINT_WHOLE_UNITS * 10**6] * 9
    assert weth == [0] + [MINT_WHOLE_UNITS * 10**18] * 9


def test_the_rpc_chain_reader_reads_real_balances_through_the_registry(deployed, settings):
    import dataclasses

    from chains.readers import RpcChainReader

    chain, deployment = deployed
    settings.CHAINS = [dataclasses.asdict(chain)]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    read = RpcChainReader().balance_of
    usdc = deployment["contracts"]["dUSDC"]
    assert (
        read(chain_id=chain.chain_id, token=usdc, holder=w3.eth.accounts[1].lower())
        == MINT_WHOLE_UNITS * 10**6
    )
    assert read(chain_id=chain.chain_id, token=usdc, holder=w3.eth.accounts[0]) == 0


def test_blocks_then_come_every_second(deployed):
    chain, _ = deployed
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    first = w3.eth.block_number
    import time

    time.sleep(2.5)
    assert 1 <= w3.eth.block_number - first <= 4


def test_a_node_that_is_not_fresh_is_refused(deployed):
    chain, _ = deployed
    with pytest.raises(DevnetError, match="not a fresh node"):
        deploy(chain)


def test_the_token_list_gives_native_coin_and_both_tokens_with_prices(deployed):
    _, deployment = deployed
    tokens = token_list([deployment])["tokens"]
    assert [(t["symbol"], t["decimals"], t["extensions"]["usdPrice"]) for t in tokens] == [
        ("ETH", 18, "3000"),
        ("dUSDC", 6, "1"),
        ("dWETH", 18, "3000"),
    ]
    assert tokens[0]["address"] == "0x" + "00" * 20


def test_a_port_whose_last_connections_are_in_time_wait_is_free_and_a_listened_one_is_not():
    import socket

    from chains.devnet import port_is_free

    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not port_is_free(port)
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listener.accept()
        accepted.close()  # the server's side closes first: its port is left in TIME-WAIT
        client.close()
    assert port_is_free(port)


@pytest.mark.django_db
def test_a_fresh_devnet_forgets_the_native_balances_its_watcher_kept():
    """Else the old life's balance at an address, empty on the new node, would look like money that left it."""
    from datetime import timedelta

    from django.utils import timezone

    from chains.devnet import forget_devnet_transactions
    from chains.models import WatchedAddress

    until = timezone.now() + timedelta(hours=1)
    WatchedAddress.objects.create(
        chain_id=31337, address="0x" + "ab" * 20, owner="order:x", watch_until=until, native_balance=10**15
    )
    WatchedAddress.objects.create(
        chain_id=8453, address="0x" + "cd" * 20, owner="order:y", watch_until=until, native_balance=7
    )
    forget_devnet_transactions([31337])
    assert dict(WatchedAddress.objects.values_list("chain_id", "native_balance")) == {31337: None, 8453: 7}
