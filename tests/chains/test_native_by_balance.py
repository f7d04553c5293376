"""Native coin sent by a contract wallet (an internal CALL) is seen, by balance or by traces, on a real anvil node;
a balance that falls is never counted; 1,000 watched addresses cost three balance batches a scan."""

import dataclasses
import secrets
from datetime import timedelta

import pytest
from django.utils import timezone
from web3 import Web3

from chains.devnet import deploy_contract
from chains.models import ChainCursor, Deposit, Incident, WatchedAddress
from chains.native import BALANCE_SEEN
from chains.watcher import scan_chain, watch_address
from orders.models import Order
from tests.chains.test_watcher import _scan_until
from tests.devnets import devnet_order

pytestmark = pytest.mark.django_db(transaction=True)


def _watched(chain) -> str:
    """A new address the watcher watches on the chain for the next hour."""
    to = Web3.to_checksum_address("0x" + secrets.token_hex(20))
    watch_address(
        chain_id=chain.chain_id, address=to, owner="test:x", watch_until=timezone.now() + timedelta(hours=1)
    )
    return to


def _wallet(w3):
    """A contract wallet owned by anvil's account 4, holding 10 ETH."""
    owner = w3.eth.accounts[4]
    wallet = deploy_contract(w3, "ContractWallet", sender=owner)
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": owner, "to": wallet.address, "value": 10**19})
    )
    return wallet, owner


def _wallet_pays(w3, wallet, owner, to: list[str], amount: int) -> str:
    tx = wallet.functions.pay(to, amount).transact({"from": owner})
    assert w3.eth.wait_for_transaction_receipt(tx).status == 1
    return tx.to_0x_hex()


@pytest.mark.parametrize("traces", [False, True])
def test_a_contract_wallets_native_payment_moves_its_order(api_client, devnet_registry, settings, traces):
    chain, deployment = devnet_registry
    settings.CHAINS = [dataclasses.asdict(chain) | {"traces": traces}]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    order = devnet_order(api_client, deployment, symbol="ETH", amount=str(10**16))
    scan_chain(chain.chain_id)  # the address is watched, its balance known
    wallet, owner = _wallet(w3)

    paid = _wallet_pays(w3, wallet, owner, [order.global_address], 10**16)
    _scan_until(chain, lambda: Order.objects.get(pk=order.pk).status != Order.Status.SCANNING_DEPOSIT)

    deposit = Deposit.objects.get(to_address=order.global_address)
    assert int(deposit.amount) == 10**16 and deposit.status == "confirmed"
    if traces:  # the traces name the transaction and the wallet, to refund it if it must be
        assert (deposit.tx_hash, deposit.from_address) == (paid, wallet.address)
    else:  # seen by balance: counted, its sender unknown
        assert deposit.log_index == BALANCE_SEEN and deposit.from_address == ""
    data = api_client.get(f"/orders/{order.id}").json()["data"]
    assert [(d["amount"], d["from"]) for d in data["depositTxs"]] == [
        (str(10**16), wallet.address if traces else None)
    ]

    for _ in range(3):  # read again and again: counted once
        scan_chain(chain.chain_id)
    assert Deposit.objects.filter(to_address=order.global_address).count() == 1


def test_a_top_level_and_an_internal_payment_in_the_same_range_count_once_each(devnet_registry):
    chain, _ = devnet_registry
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    to = _watched(chain)
    scan_chain(chain.chain_id)
    wallet, owner = _wallet(w3)
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": w3.eth.accounts[2], "to": to, "value": 7})
    )
    _wallet_pays(w3, wallet, owner, [to, to], 5)  # two internal transfers in one transaction

    _scan_until(chain, lambda: Deposit.objects.filter(to_address=to).count() >= 2)
    amounts = sorted(int(d.amount) for d in Deposit.objects.filter(to_address=to))
    assert amounts == [7, 10]  # the top-level 7 by its transaction, the internal 5 + 5 by balance
    assert int(WatchedAddress.objects.get(address=to).native_balance) == 17


def test_a_balance_that_falls_is_never_counted(devnet_registry):
    chain, _ = devnet_registry
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    to = _watched(chain)
    w3.provider.make_request("anvil_setBalance", [to, hex(1000)])
    w3.provider.make_request("evm_mine", [])
    scan_chain(chain.chain_id)
    scan_chain(chain.chain_id)
    counted = list(Deposit.objects.filter(to_address=to).values_list("amount", flat=True))

    w3.provider.make_request("anvil_setBalance", [to, hex(400)])  # as a node lying about it would show
    for _ in range(3):
        w3.provider.make_request("evm_mine", [])
        scan_chain(chain.chain_id)

    assert list(Deposit.objects.filter(to_address=to).values_list("amount", flat=True)) == counted
    incident = Incident.objects.get(kind=Incident.Kind.BALANCE_ANOMALY)
    assert to in incident.summary and "1000 to 400" in incident.summary


def test_a_malformed_balance_answer_counts_nothing_and_keeps_the_cursor(devnet_registry, settings):
    from tests.rpc_proxy import rpc_proxies

    chain, _ = devnet_registry
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    to = _watched(chain)
    with rpc_proxies(chain.rpc_url, count=1) as (node,):
        settings.CHAINS = [dataclasses.asdict(chain) | {"rpc_urls": [node.url]}]
        scan_chain(chain.chain_id)
        before = ChainCursor.objects.get(pk=chain.chain_id).scanned_to
        wallet, owner = _wallet(w3)
        _wallet_pays(w3, wallet, owner, [to], 99)
        node.balance = "a lot"
        assert scan_chain(chain.chain_id) is None
        cursor = ChainCursor.objects.get(pk=chain.chain_id)
        assert cursor.scanned_to == before and "eth_getBalance" in cursor.last_error
        assert not Deposit.objects.filter(to_address=to).exists()
        node.balance = None
        _scan_until(chain, lambda: Deposit.objects.filter(to_address=to).exists())
    assert [int(d.amount) for d in Deposit.objects.filter(to_address=to)] == [99]


def test_a_thousand_watched_addresses_cost_three_balance_batches_a_scan(
    devnet_registry, settings, django_assert_max_num_queries
):
    chain, _ = devnet_registry
    until = timezone.now() + timedelta(hours=1)
    WatchedAddress.objects.bulk_create(
        WatchedAddress(
            chain_id=chain.chain_id,
            address=Web3.to_checksum_address("0x" + secrets.token_hex(20)),
            owner="test:many",
            watch_until=until,
        )
        for _ in range(1000)
    )
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    scan_chain(chain.chain_id)  # the first scan also reads the balances before (new addresses)
    w3.provider.make_request("evm_mine", [])
    with django_assert_max_num_queries(20):  # the balances that did not move are not written again
        steady = scan_chain(chain.chain_id)
    settings.WATCHER_BALANCES_PER_BATCH = 10**6  # one batch for all: native detection alone costs one less
    w3.provider.make_request("evm_mine", [])
    one_batch = scan_chain(chain.chain_id)

    assert steady is not None and one_batch is not None
    # 1,000 addresses and the vault's and solver's (their gas is read in the same batches): 3 batches of 500,
    # or 1 of 1,002
    assert steady.rpc_requests - one_batch.rpc_requests == 2
    # the node's head (1), the last block read, for reorgs (1), Transfer logs (1: above 500 addresses, every
    # Transfer of the range, matched here), the blocks (1), balances (3 batches)
    assert steady.rpc_requests == 7


def _watch_many(chain, count: int) -> list[str]:
    until = timezone.now() + timedelta(hours=1)
    addresses = [Web3.to_checksum_address("0x" + secrets.token_hex(20)) for _ in range(count)]
    WatchedAddress.objects.bulk_create(
        WatchedAddress(chain_id=chain.chain_id, address=a, owner="test:many", watch_until=until)
        for a in addresses
    )
    return addresses


def test_with_traces_a_scan_costs_the_same_requests_for_ten_or_two_thousand_addresses(
    devnet_registry, settings
):
    chain, deployment = devnet_registry
    settings.CHAINS = [dataclasses.asdict(chain) | {"traces": True}]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    wallet, owner = _wallet(w3)
    token = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=_ERC20)
    costs = {}
    for count in (10, 2000):
        WatchedAddress.objects.filter(owner="test:many").delete()
        addresses = _watch_many(chain, count)
        scan_chain(chain.chain_id)
        last = addresses[-1]  # the last of the set: matched in memory, not by the node's filter
        paid_by_wallet = _wallet_pays(w3, wallet, owner, [last], 7 * 10**15)
        w3.eth.wait_for_transaction_receipt(
            token.functions.transfer(last, 123).transact({"from": w3.eth.accounts[1]})
        )
        w3.provider.make_request("evm_mine", [])
        result = scan_chain(chain.chain_id)
        assert result is not None
        costs[count] = result.rpc_requests
        found = {(d.token, int(d.amount), d.tx_hash) for d in Deposit.objects.filter(to_address=last)}
        assert (
            "0x" + "00" * 20,
            7 * 10**15,
            paid_by_wallet,
        ) in found  # the internal transfer, named by traces
        assert any(t == token.address and a == 123 for t, a, _ in found)
    # head, last block, Transfer logs, blocks, traces, the traced transactions' receipts, the signers' gas
    assert costs[10] == costs[2000] == 7
    assert not WatchedAddress.objects.filter(native_balance__isnull=False).exists()  # no balance kept


_ERC20 = [
    {
        "name": "transfer",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    }
]
