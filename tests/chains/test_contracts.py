"""The deposit contracts on a real anvil node: the address the service hands out is one it can sweep."""

import pytest
from web3 import Web3
from web3.exceptions import ContractLogicError

from chains.artifacts import artifact, forwarder_init_code_hash
from chains.devnet import deploy_contract
from chains.evm import deposit_address_for, deposit_salt

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def chain(anvil):
    w3 = Web3(Web3.HTTPProvider(anvil))
    vault, payer, stranger, destination = (
        w3.eth.accounts[0],
        w3.eth.accounts[1],
        w3.eth.accounts[2],
        w3.eth.accounts[5],
    )
    factory = deploy_contract(w3, "DepositFactory", vault, sender=vault)  # the first deployment of account 0
    token = deploy_contract(w3, "TestToken", "Devnet USD Coin", "dUSDC", 6, vault, sender=vault)
    w3.eth.wait_for_transaction_receipt(token.functions.mint(payer, 1_000 * 10**6).transact({"from": vault}))
    return (
        w3,
        factory,
        token,
        {"vault": vault, "payer": payer, "stranger": stranger, "destination": destination},
    )


def test_a_fresh_devnet_puts_the_factory_where_development_expects_it(chain, settings):
    _, factory, _, _ = chain
    assert factory.address == settings.DEVNET_FACTORY_ADDRESS


def test_the_service_computes_the_address_the_factory_deploys(chain, settings):
    w3, factory, _, accounts = chain
    salt = deposit_salt(kind="order", identifier="order-1")

    assert factory.functions.forwarderInitCodeHash().call() == forwarder_init_code_hash()
    expected = deposit_address_for(factory=factory.address, kind="order", identifier="order-1")
    assert factory.functions.forwarderAddress(salt).call() == expected

    w3.eth.wait_for_transaction_receipt(factory.functions.deploy(salt).transact({"from": accounts["vault"]}))
    code = w3.eth.get_code(expected)
    assert len(code) == len(bytes.fromhex(artifact("DepositForwarder")["deployedBytecode"][2:]))
    assert bytes.fromhex(factory.address[2:]) in code  # its immutable owner: the factory


def test_tokens_and_native_coin_sent_to_a_deposit_address_are_swept_by_the_owner_only(chain, settings):
    w3, factory, token, accounts = chain
    address = deposit_address_for(
        factory=factory.address, kind="order", identifier="order-2"
    )  # not deployed yet
    salt = deposit_salt(kind="order", identifier="order-2")
    w3.eth.wait_for_transaction_receipt(
        token.functions.transfer(address, 10 * 10**6).transact({"from": accounts["payer"]})
    )
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": accounts["payer"], "to": address, "value": w3.to_wei(1, "ether")})
    )
    assert token.functions.balanceOf(address).call() == 10 * 10**6
    destination = accounts["destination"]
    before = w3.eth.get_balance(destination)

    with pytest.raises(ContractLogicError):
        factory.functions.sweep(salt, token.address, accounts["stranger"]).transact(
            {"from": accounts["stranger"]}
        )

    vault = {"from": accounts["vault"]}
    w3.eth.wait_for_transaction_receipt(
        factory.functions.sweep(salt, token.address, destination).transact(vault)
    )
    w3.eth.wait_for_transaction_receipt(
        factory.functions.sweep(salt, "0x" + "00" * 20, destination).transact(vault)
    )

    assert token.functions.balanceOf(address).call() == 0
    assert token.functions.balanceOf(destination).call() == 10 * 10**6
    assert w3.eth.get_balance(address) == 0
    assert w3.eth.get_balance(destination) - before == w3.to_wei(1, "ether")


def test_only_the_factory_can_sweep_a_forwarder(chain, settings):
    w3, factory, token, accounts = chain
    salt = deposit_salt(kind="order", identifier="order-3")
    w3.eth.wait_for_transaction_receipt(factory.functions.deploy(salt).transact({"from": accounts["vault"]}))
    forwarder = w3.eth.contract(
        address=factory.functions.forwarderAddress(salt).call(), abi=artifact("DepositForwarder")["abi"]
    )
    with pytest.raises(ContractLogicError):
        forwarder.functions.sweep(token.address, accounts["stranger"]).transact(
            {"from": accounts["stranger"]}
        )
