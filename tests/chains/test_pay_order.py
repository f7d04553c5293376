"""`manage.py pay_order`: a real transfer on the order's devnet to its deposit address."""

import pytest
from django.core.management import CommandError, call_command
from web3 import Web3

from chains.artifacts import artifact
from tests.devnets import devnet_order
from tests.orders.conftest import order_body

pytestmark = pytest.mark.django_db


def test_pays_the_deposit_address_in_the_orders_token_and_prints_the_hash(
    api_client, devnet_registry, capsys
):
    chain, deployment = devnet_registry
    order = devnet_order(api_client, deployment)

    call_command("pay_order", str(order.id))
    tx_hash = capsys.readouterr().out.strip()

    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    receipt = w3.eth.get_transaction_receipt(tx_hash)
    assert receipt.status == 1 and receipt["from"] == w3.eth.accounts[1]
    token = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("TestToken")["abi"])
    assert token.functions.balanceOf(order.global_address).call() == 10_000_000


def test_native_coin_a_chosen_amount_and_another_account(api_client, devnet_registry, capsys):
    chain, deployment = devnet_registry
    order = devnet_order(api_client, deployment, symbol="ETH", amount=str(10**18))

    call_command("pay_order", str(order.id), "--amount", str(4 * 10**17), "--from-account", "3")

    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    assert w3.eth.get_balance(order.global_address) == 4 * 10**17
    assert w3.eth.get_transaction(capsys.readouterr().out.strip())["from"] == w3.eth.accounts[3]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--amount", "0"], "--amount must be positive"),
        (["--amount", str(10**30)], "holds less than"),
        (["--from-account", "42"], "not 42"),
    ],
)
def test_refusals_say_why_and_send_nothing(api_client, devnet_registry, args, message):
    _, deployment = devnet_registry
    order = devnet_order(api_client, deployment)
    w3 = Web3(Web3.HTTPProvider(devnet_registry[0].rpc_url))
    token = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("TestToken")["abi"])
    block = w3.eth.block_number
    with pytest.raises(CommandError, match=message):
        call_command("pay_order", str(order.id), *args)
    assert token.functions.balanceOf(order.global_address).call() == 0  # nothing was sent
    assert all(not w3.eth.get_block(n)["transactions"] for n in range(block + 1, w3.eth.block_number + 1))


def test_an_order_on_a_real_chain_is_not_paid(api_client, tokens, devnet_registry, settings):
    settings.CHAINS = [
        *settings.CHAINS,
        {"chain_id": 8453, "name": "Base", "native_symbol": "ETH", "factory_address": "0x" + "12" * 20},
    ]
    response = api_client.post("/orders", order_body(), format="json")
    with pytest.raises(CommandError, match="not a devnet"):
        call_command("pay_order", response.json()["data"]["id"])
    with pytest.raises(CommandError, match="No order"):
        call_command("pay_order", "not-an-id")


def test_pays_a_quick_payment_too(api_client, devnet_registry, capsys):
    chain, deployment = devnet_registry
    body = {
        "amount": "2500000",
        "token_address": deployment["contracts"]["dUSDC"],
        "chain_id": 31337,
        "recipient_address": "0x" + "11" * 20,
    }
    created = api_client.post("/api/v1/quick-pay", body, format="json").json()

    call_command("pay_order", created["id"])

    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    assert w3.eth.get_transaction_receipt(capsys.readouterr().out.strip()).status == 1
    token = w3.eth.contract(address=body["token_address"], abi=artifact("TestToken")["abi"])
    assert token.functions.balanceOf(created["deposit_address"]).call() == 2_500_000
    with pytest.raises(CommandError, match="No order or quick payment qp_nope"):
        call_command("pay_order", "qp_nope")


def test_the_running_devnets_are_read_from_var_so_other_ports_work(
    api_client, devnet_registry, settings, tmp_path, capsys
):
    """`DEVNET_PORTS=9200,9201 make run`, then `pay_order` in a terminal without DEVNET_PORTS."""
    import dataclasses
    import json

    chain, deployment = devnet_registry
    order = devnet_order(api_client, deployment)
    settings.CHAINS = [dataclasses.asdict(chain) | {"rpc_urls": ["http://127.0.0.1:1"]}]  # the default port
    settings.VAR_DIR = str(tmp_path)
    (tmp_path / "devnets.json").write_text(json.dumps([deployment]))

    call_command("pay_order", str(order.id))

    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    assert w3.eth.get_transaction_receipt(capsys.readouterr().out.strip()).status == 1
    (tmp_path / "devnets.json").unlink()
    with pytest.raises(
        CommandError, match=r"Devnet A does not answer at http://127.0.0.1:1: is `make run` running\?"
    ):
        call_command("pay_order", str(order.id))


def test_a_command_that_cannot_connect_says_so_in_one_line(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "SERVICE_ENV": "development", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/x"}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("migrate: cannot reach the database:") and "Traceback" not in done.stderr


def test_a_refund_balance_top_up_is_paid_with_an_amount_and_refused_without(
    devnet_registry, organization, capsys
):
    """The refund walkthrough (docs/guides/refunds.md, then in the README) had no command to top the balance up on the devnets (issue 64)."""
    from refunds.top_ups import top_up_create

    chain, deployment = devnet_registry
    top_up = top_up_create(
        organization=organization, chain_id=31337, token_address=deployment["contracts"]["dUSDC"]
    )
    with pytest.raises(CommandError, match="give --amount"):
        call_command("pay_order", top_up.id)

    call_command("pay_order", top_up.id, "--amount", "2500000")

    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    token = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("TestToken")["abi"])
    assert token.functions.balanceOf(top_up.deposit_address).call() == 2_500_000
    assert w3.eth.get_transaction_receipt(capsys.readouterr().out.strip()).status == 1
