"""A development wallet: transfers from anvil's unlocked accounts on a devnet, and nowhere else."""

from __future__ import annotations

from decimal import Decimal

import requests
from django.conf import settings
from web3 import Web3
from web3.types import Wei

from chains.artifacts import artifact
from chains.devnet import NATIVE, DevnetError, deployed_rpc_url
from chains.registry import Chain, chain_get
from core.errors import Conflict, InvalidRequest

PAYER_ACCOUNT = 1  # anvil's first payer account (chains.devnet.PAYERS): what `manage.py pay_order` pays from


def devnet_transfer(*, chain: Chain, token: str, to: str, amount: int, from_account: int) -> str:
    """Send `amount` of `token` (the zero address: native coin) from anvil's account `from_account`; the tx hash.

    Waits for the transaction to be mined and refuses one that reverted (a
    balance too low, say): what it returns is on the chain.
    """
    if not chain.devnet:
        raise DevnetError(f"{chain.name} is not a devnet: the development wallet pays on devnets only")
    # The registry's URL; else where `make run` last started this devnet (another DEVNET_PORTS than this
    # process was given: `pay_order` in a second terminal).
    urls = [chain.rpc_url, *[url for url in [deployed_rpc_url(chain)] if url and url != chain.rpc_url]]
    for url in urls:
        w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 10}))
        try:
            w3.eth.chain_id  # noqa: B018 - is it up?
        except requests.ConnectionError:
            continue
        return _transfer(w3, token, to, amount, from_account)
    raise DevnetError(f"{chain.name} does not answer at {' or '.join(urls)}: is `make run` running?")


def _transfer(w3: Web3, token: str, to: str, amount: int, from_account: int) -> str:
    accounts = w3.eth.accounts
    if not 0 <= from_account < len(accounts):
        raise DevnetError(f"anvil has accounts 0-{len(accounts) - 1}, not {from_account}")
    sender = accounts[from_account]
    if token == NATIVE:
        tx_hash = w3.eth.send_transaction({"from": sender, "to": to, "value": Wei(amount)})
    else:
        erc20 = w3.eth.contract(address=Web3.to_checksum_address(token), abi=artifact("TestToken")["abi"])
        if erc20.functions.balanceOf(sender).call() < amount:
            raise DevnetError(f"account {from_account} holds less than {amount} of {token}")
        tx_hash = erc20.functions.transfer(to, amount).transact({"from": sender})
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30)
    if receipt["status"] != 1:
        raise DevnetError(f"the transfer {tx_hash.to_0x_hex()} reverted")
    return tx_hash.to_0x_hex()


def devnet_pay_allowed(*, chain_id: int, token: str, amount: int) -> None:
    """400 naming `amount` when one test helper call may not pay it: TEST_HELPER_MAX_TOKENS whole tokens at
    most, and no more than that many US dollars' worth where the registry has the token's price."""
    cap = _devnet_pay_cap(chain_id=chain_id, token=token)
    if amount > cap:
        raise InvalidRequest(
            f"The devnet wallet, which every test-mode organization shares, pays at most {cap} (the token's "
            "smallest units) a call: ask for less, or pay from a wallet of your own.",
            field="amount",
        )


def _devnet_pay_cap(*, chain_id: int, token: str) -> int:
    from chains.tokens import token_get

    found = token_get(chain_id=chain_id, address=token)
    decimals = found.decimals if found is not None else 18
    whole = settings.TEST_HELPER_MAX_TOKENS
    cap = whole * 10**decimals
    if found is not None and found.usd_price:
        cap = min(cap, int(Decimal(whole) / found.usd_price * 10**decimals))
    return cap


def devnet_pay(*, chain_id: int, token: str, to: str, amount: int) -> str:
    """The test helpers' payer (checkout.test_helpers): `devnet_transfer` from PAYER_ACCOUNT; the hash, once
    mined. 400 (Conflict) where it cannot pay: not a devnet, a balance too low, the devnet down."""
    chain = chain_get(chain_id)
    if chain is None or not chain.devnet:
        raise Conflict(
            f"chain {chain_id} is not a devnet: the test helpers pay on devnets only (on a public test "
            "network, pay from a wallet of your own)."
        )
    devnet_pay_allowed(chain_id=chain_id, token=token, amount=amount)
    try:
        return devnet_transfer(chain=chain, token=token, to=to, amount=amount, from_account=PAYER_ACCOUNT)
    except DevnetError as exc:
        raise Conflict(f"the devnet wallet could not pay: {exc}") from None
