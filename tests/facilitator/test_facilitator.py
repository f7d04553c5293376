"""The x402 facilitator at /x402/ on a real anvil node: supported kinds, verify, and settle through the outbox,
in both protocol versions, with every refusal the specification names (issue 45, item 2)."""

from __future__ import annotations

import json
import secrets
import time

import pytest
from eth_abi import encode
from eth_account import Account
from web3 import Web3

from chains.artifacts import artifact
from chains.devnet import deploy_contract, devnet_private_key
from chains.evm import MULTICALL3_ADDRESS
from chains.models import OutboxTx
from chains.outbox import outbox_check_receipts, outbox_send
from facilitator.models import Settlement
from ledger.models import Posting
from tests.conftest import client_for
from tests.facilitator.signing import authorize
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db

NETWORK = "eip155:31337"


@pytest.fixture
def chain(devnets_registry, settings):
    settings.X402_SETTLE_WAIT_SECONDS = 0  # the test drives the outbox itself, between two settle requests
    chain, deployment = devnets_registry[0]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    usdc = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"])
    return w3, usdc, deployment


@pytest.fixture
def keys(organization):
    _, write = make_api_key(organization, permissions=["write"], name="facilitator")
    _, read = make_api_key(organization, permissions=["read"], name="reader")
    return client_for(write), client_for(read)


def payer_account(index=1):
    return Account.from_key(devnet_private_key(index))


def requirements(usdc, pay_to, amount=250_000, **changes):
    return {
        "scheme": "exact",
        "network": NETWORK,
        "amount": str(amount),
        "asset": usdc.address,
        "payTo": pay_to,
        "maxTimeoutSeconds": 60,
        "extra": {"name": "Devnet USD Coin", "version": "2"},
    } | changes


def signed(w3, usdc, required, payer, *, key=None, **authorization_changes):
    """A version 2 request body: the payer's authorization of exactly what `required` asks, signed."""
    to = authorization_changes.pop("to", required["payTo"])
    value = authorization_changes.pop("value", required["amount"])
    payload = authorize(payer, to=to, value=value, token=usdc.address, key=key, **authorization_changes)
    return {
        "x402Version": 2,
        "paymentPayload": {
            "x402Version": 2,
            "resource": {"url": "https://api.example.com/report"},
            "accepted": required,
            "payload": payload,
        },
        "paymentRequirements": required,
    }


def as_v1(body):
    """The same payment as a version 1 request."""
    required = body["paymentRequirements"]
    v1_required = {
        "scheme": "exact",
        "network": required["network"],
        "maxAmountRequired": required["amount"],
        "resource": "https://api.example.com/report",
        "payTo": required["payTo"],
        "maxTimeoutSeconds": 60,
        "asset": required["asset"],
        "extra": required["extra"],
    }
    return {
        "x402Version": 1,
        "paymentPayload": {
            "x402Version": 1,
            "scheme": "exact",
            "network": required["network"],
            "payload": body["paymentPayload"]["payload"],
        },
        "paymentRequirements": v1_required,
    }


def drive_outbox(rounds=60):
    """What the signing worker and beat do: send what is queued, read receipts until nothing is in flight."""
    for _ in range(rounds):
        for tx_id in OutboxTx.objects.filter(status=OutboxTx.Status.QUEUED).values_list("pk", flat=True):
            outbox_send(tx_id)
        outbox_check_receipts(chain_id=31337)
        if not OutboxTx.objects.filter(status__in=["queued", "signed", "broadcast"]).exists():
            return
        time.sleep(0.25)
    pytest.fail("the outbox did not finish")


def post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


def test_supported_lists_each_chain_with_a_signature_token_in_both_versions_and_the_signer(
    api_client, chain, settings
):
    response = api_client.get("/x402/supported")

    assert response.status_code == 200
    body = response.json()
    assert {"x402Version": 2, "scheme": "exact", "network": "eip155:31337"} in body["kinds"]
    assert {"x402Version": 2, "scheme": "exact", "network": "eip155:31338"} in body["kinds"]
    assert {"x402Version": 1, "scheme": "exact", "network": "eip155:31337"} in body["kinds"]
    assert body["signers"] == {"eip155:*": [settings.VAULT_ADDRESS]}
    assert body["extensions"] == []


def test_a_valid_authorization_verifies_for_a_read_key_and_nothing_is_written(chain, keys, api_client):
    w3, usdc, _ = chain
    _, reader = keys
    body = signed(w3, usdc, requirements(usdc, Account.create().address), payer_account())

    answer = post(reader, "/x402/verify", body)
    assert (answer.status_code, answer.json()) == (200, {"isValid": True, "payer": payer_account().address})
    assert post(reader, "/x402/verify", as_v1(body)).json() == {
        "isValid": True,
        "payer": payer_account().address,
    }

    refused = post(api_client, "/x402/verify", body)  # no key
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    assert not OutboxTx.objects.exists() and not Settlement.objects.exists()


def _weth_required(deployment, pay_to):
    return {
        "scheme": "exact",
        "network": NETWORK,
        "amount": "5",
        "asset": deployment["contracts"]["dWETH"],
        "payTo": pay_to,
        "maxTimeoutSeconds": 60,
        "extra": {"name": "Devnet Wrapped Ether", "version": "1"},
    }


REFUSALS = {
    "value_mismatch": lambda w3, usdc, dep, r, p: signed(w3, usdc, r, p, value="249999"),
    "recipient_mismatch": lambda w3, usdc, dep, r, p: signed(w3, usdc, r, p, to=Account.create().address),
    "expired": lambda w3, usdc, dep, r, p: signed(w3, usdc, r, p, validBefore=str(int(time.time()) + 2)),
    "not_yet_valid": lambda w3, usdc, dep, r, p: signed(
        w3, usdc, r, p, validAfter=str(int(time.time()) + 600)
    ),
    "another_signer": lambda w3, usdc, dep, r, p: signed(w3, usdc, r, p, key=Account.create().key),
    "no_eip3009": lambda w3, usdc, dep, r, p: signed(w3, usdc, _weth_required(dep, r["payTo"]), p),
    "unknown_network": lambda w3, usdc, dep, r, p: signed(w3, usdc, r | {"network": "eip155:999"}, p),
    "other_scheme": lambda w3, usdc, dep, r, p: _with(signed(w3, usdc, r, p), scheme="upto"),
    "wrong_domain": lambda w3, usdc, dep, r, p: signed(
        w3, usdc, r | {"extra": {"name": "USDC", "version": "2"}}, p
    ),
    "no_funds": lambda w3, usdc, dep, r, p: signed(w3, usdc, r, Account.create()),
    "bad_version": lambda w3, usdc, dep, r, p: signed(w3, usdc, r, p) | {"x402Version": 3},
    "payload_network": lambda w3, usdc, dep, r, p: _accepted(signed(w3, usdc, r, p), network="eip155:31338"),
    "not_hex_nonce": lambda w3, usdc, dep, r, p: signed(w3, usdc, r, p, nonce="0x1234"),
}
REASONS = {
    "value_mismatch": "invalid_exact_evm_payload_authorization_value_mismatch",
    "recipient_mismatch": "invalid_exact_evm_payload_recipient_mismatch",
    "expired": "invalid_exact_evm_payload_authorization_valid_before",
    "not_yet_valid": "invalid_exact_evm_payload_authorization_valid_after",
    "another_signer": "invalid_exact_evm_payload_signature",
    "no_eip3009": "invalid_exact_evm_eip3009_not_supported",
    "unknown_network": "invalid_network",
    "other_scheme": "unsupported_scheme",
    "wrong_domain": "invalid_exact_evm_token_name_mismatch",
    "no_funds": "insufficient_funds",
    "bad_version": "invalid_x402_version",
    "payload_network": "network_mismatch",
    "not_hex_nonce": "invalid_payload",
}


def _with(body, **changes):
    body["paymentRequirements"] = body["paymentRequirements"] | changes
    return body


def _accepted(body, **changes):
    body["paymentPayload"]["accepted"] = body["paymentPayload"]["accepted"] | changes
    return body


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_bad_authorization_is_refused_with_the_specifications_reason_and_nothing_moves(chain, keys, case):
    w3, usdc, deployment = chain
    writer, reader = keys
    body = REFUSALS[case](w3, usdc, deployment, requirements(usdc, Account.create().address), payer_account())

    verified = post(reader, "/x402/verify", body)
    settled = post(writer, "/x402/settle", body)

    assert verified.status_code == 200
    assert (verified.json()["isValid"], verified.json()["invalidReason"]) == (False, REASONS[case])
    assert verified.json()["invalidMessage"]
    assert settled.status_code == 200
    assert (settled.json()["success"], settled.json()["errorReason"], settled.json()["transaction"]) == (
        False,
        REASONS[case],
        "",
    )
    assert not OutboxTx.objects.exists() and not Settlement.objects.exists()


def test_a_body_that_is_not_json_or_not_a_request_is_a_400_in_the_protocols_shape(keys):
    writer, reader = keys
    garbage = reader.post("/x402/verify", "{not json", content_type="application/json")
    assert (garbage.status_code, garbage.json()["invalidReason"]) == (400, "invalid_payload")
    for body in ([], {"x402Version": 2}, {"paymentPayload": {}, "paymentRequirements": "x"}):
        answer = post(writer, "/x402/settle", body)
        assert answer.status_code == 200
        assert answer.json()["success"] is False
        assert answer.json()["errorReason"] in ("invalid_payload", "invalid_payment_requirements")
    assert not Settlement.objects.exists()


def test_settle_sends_the_authorization_once_pays_the_gas_and_answers_the_same_every_time(
    chain, keys, settings
):
    w3, usdc, _ = chain
    writer, _ = keys
    payer, merchant = payer_account(2), Account.create().address
    body = signed(w3, usdc, requirements(usdc, merchant), payer)
    tokens_before = usdc.functions.balanceOf(payer.address).call()
    native_before = w3.eth.get_balance(payer.address)

    pending = post(writer, "/x402/settle", body).json()
    assert (pending["success"], pending["errorReason"]) == (False, "settlement_pending")
    assert (
        post(writer, "/x402/settle", as_v1(body)).json()["errorReason"] == "settlement_pending"
    )  # still one
    drive_outbox()
    settled = post(writer, "/x402/settle", body).json()
    again = post(writer, "/x402/settle", body).json()

    tx = OutboxTx.objects.get()
    assert (tx.key, tx.signer, tx.status, tx.to) == (
        f"x402:{Settlement.objects.get().pk}:settle",
        "vault",
        "mined",
        usdc.address,
    )
    assert (
        settled
        == again
        == {
            "success": True,
            "payer": payer.address,
            "transaction": tx.tx_hash,
            "network": NETWORK,
            "amount": "250000",
        }
    )
    assert usdc.functions.balanceOf(merchant).call() == 250_000
    assert usdc.functions.balanceOf(payer.address).call() == tokens_before - 250_000
    assert w3.eth.get_balance(payer.address) == native_before  # the payer paid no gas
    row = Settlement.objects.get()
    assert (row.status, row.submitted_by_us, row.tx_hash, row.x402_version) == (
        "settled",
        True,
        tx.tx_hash,
        2,
    )
    gas = Posting.objects.get(key__startswith=f"outbox:{tx.key}:")
    assert gas.kind == "settle" and gas.tx_hash == tx.tx_hash  # the vault's gas, in the ledger
    replay = post(writer, "/x402/verify", body).json()
    assert replay["invalidReason"] == "invalid_exact_evm_nonce_already_used"


def test_an_authorization_someone_else_submitted_first_is_counted_with_their_transaction(chain, keys):
    w3, usdc, _ = chain
    writer, _ = keys
    payer, merchant = payer_account(3), Account.create().address
    body = signed(w3, usdc, requirements(usdc, merchant, amount=7), payer)
    authorization = body["paymentPayload"]["payload"]["authorization"]
    signature = bytes.fromhex(body["paymentPayload"]["payload"]["signature"][2:])
    theirs = w3.eth.wait_for_transaction_receipt(
        usdc.functions.transferWithAuthorization(
            authorization["from"],
            authorization["to"],
            7,
            0,
            int(authorization["validBefore"]),
            authorization["nonce"],
            signature,
        ).transact({"from": w3.eth.accounts[5]})
    )

    answer = post(writer, "/x402/settle", body).json()

    assert (answer["success"], answer["transaction"]) == (True, "0x" + bytes(theirs.transactionHash).hex())
    assert not OutboxTx.objects.exists()
    assert Settlement.objects.get().submitted_by_us is False
    assert usdc.functions.balanceOf(merchant).call() == 7  # once


def test_a_settlement_that_can_no_longer_move_the_tokens_fails_and_costs_the_payer_nothing(chain, keys):
    w3, usdc, _ = chain
    writer, _ = keys
    payer = Account.create()  # holds exactly what it authorizes, then moves it away before the settlement
    w3.eth.wait_for_transaction_receipt(
        usdc.functions.transfer(payer.address, 100).transact({"from": w3.eth.accounts[1]})
    )
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_transaction({"from": w3.eth.accounts[1], "to": payer.address, "value": 10**17})
    )
    body = signed(w3, usdc, requirements(usdc, Account.create().address, amount=100), payer)
    assert post(writer, "/x402/settle", body).json()["errorReason"] == "settlement_pending"
    moved = usdc.functions.transfer(w3.eth.accounts[1], 100).build_transaction(
        {
            "from": payer.address,
            "nonce": 0,
            "gas": 100_000,
            "maxFeePerGas": 10**10,
            "maxPriorityFeePerGas": 10**9,
        }
    )
    w3.eth.wait_for_transaction_receipt(
        w3.eth.send_raw_transaction(payer.sign_transaction(moved).raw_transaction)
    )

    drive_outbox()
    answer = post(writer, "/x402/settle", body).json()

    assert (answer["success"], answer["errorReason"]) == (False, "invalid_transaction_state")
    assert "transferWithAuthorization failed" in answer["errorMessage"]
    assert Settlement.objects.get().status == "failed"
    assert usdc.functions.balanceOf(payer.address).call() == 0  # what it moved itself; nothing by us


def test_a_contract_wallets_erc1271_signature_verifies_and_settles(chain, keys):
    w3, usdc, _ = chain
    writer, reader = keys
    owner = Account.create()
    wallet = deploy_contract(w3, "SigningWallet", owner.address, sender=w3.eth.accounts[6])
    w3.eth.wait_for_transaction_receipt(
        usdc.functions.transfer(wallet.address, 500).transact({"from": w3.eth.accounts[1]})
    )
    merchant = Account.create().address
    body = signed(w3, usdc, requirements(usdc, merchant, amount=500), owner, **{"from": wallet.address})

    assert post(reader, "/x402/verify", body).json() == {"isValid": True, "payer": wallet.address}
    post(writer, "/x402/settle", body)
    drive_outbox()

    assert post(writer, "/x402/settle", body).json()["success"] is True
    assert usdc.functions.balanceOf(merchant).call() == 500


def _counterfactual_wallet(w3, usdc, owner, amount: int):
    """A SigningWallet of `owner` that is not deployed yet, funded at its future address, and the factory that
    makes it; (factory, wallet address, the factory's call that deploys it)."""
    factory = deploy_contract(w3, "SigningWalletFactory", sender=w3.eth.accounts[6])
    salt = secrets.token_bytes(32)
    wallet = factory.functions.addressOf(owner.address, salt).call()
    w3.eth.wait_for_transaction_receipt(
        usdc.functions.transfer(wallet, amount).transact({"from": w3.eth.accounts[1]})
    )
    deploying = factory.functions.deploy(owner.address, salt)._encode_transaction_data()
    return factory, wallet, deploying


def _erc6492(factory: str, deploying: str, inner: str) -> str:
    """The payload's signature wrapped as ERC-6492 wraps a signature of a wallet not deployed yet."""
    wrapped = encode(
        ["address", "bytes", "bytes"], [factory, bytes.fromhex(deploying[2:]), bytes.fromhex(inner[2:])]
    )
    return "0x" + wrapped.hex() + "6492" * 16


def test_an_undeployed_wallets_erc6492_signature_deploys_it_and_pays_in_one_transaction(
    chain, keys, settings
):
    w3, usdc, _ = chain
    writer, reader = keys
    owner, merchant = Account.create(), Account.create().address
    factory, wallet, deploying = _counterfactual_wallet(w3, usdc, owner, 700)
    settings.X402_ERC6492_FACTORIES = [factory.address.lower()]
    body = signed(w3, usdc, requirements(usdc, merchant, amount=700), owner, **{"from": wallet})
    payload = body["paymentPayload"]["payload"]
    payload["signature"] = _erc6492(factory.address, deploying, payload["signature"])
    vault_gas_before = w3.eth.get_balance(settings.VAULT_ADDRESS)

    assert post(reader, "/x402/verify", body).json() == {"isValid": True, "payer": wallet}
    assert w3.eth.get_code(wallet) == b""  # verifying deployed nothing
    post(writer, "/x402/settle", body)
    drive_outbox()
    answer = post(writer, "/x402/settle", body).json()

    assert answer["success"] is True, answer
    assert w3.eth.get_code(wallet) != b""
    assert usdc.functions.balanceOf(merchant).call() == 700 and usdc.functions.balanceOf(wallet).call() == 0
    tx = OutboxTx.objects.get()
    assert tx.to.lower() == MULTICALL3_ADDRESS.lower() and tx.tx_hash == answer["transaction"]
    assert w3.eth.get_balance(settings.VAULT_ADDRESS) < vault_gas_before  # the service paid the gas
    assert post(writer, "/x402/settle", body).json() == answer  # the same payload settles once


@pytest.mark.parametrize("case", ["factory not allowed", "wrong owner", "no funds", "deployed already"])
def test_erc6492_signatures_are_refused_for_what_they_lack_and_deploy_nothing(chain, keys, settings, case):
    w3, usdc, _ = chain
    writer, reader = keys
    owner, merchant = Account.create(), Account.create().address
    factory, wallet, deploying = _counterfactual_wallet(w3, usdc, owner, 0 if case == "no funds" else 700)
    settings.X402_ERC6492_FACTORIES = [] if case == "factory not allowed" else [factory.address.lower()]
    body = signed(
        w3,
        usdc,
        requirements(usdc, merchant, amount=700),
        owner,
        key=Account.create().key if case == "wrong owner" else None,
        **{"from": wallet},
    )
    payload = body["paymentPayload"]["payload"]
    payload["signature"] = _erc6492(factory.address, deploying, payload["signature"])
    if case == "deployed already":  # then its inner signature is checked as ERC-1271's, and it is paid
        w3.eth.wait_for_transaction_receipt(
            w3.eth.send_transaction({"from": w3.eth.accounts[6], "to": factory.address, "data": deploying})
        )

    verified = post(reader, "/x402/verify", body).json()
    settled = post(writer, "/x402/settle", body).json()

    if case == "deployed already":
        assert verified["isValid"] is True
        drive_outbox()
        assert post(writer, "/x402/settle", body).json()["success"] is True
        assert OutboxTx.objects.get().to.lower() == usdc.address.lower()  # no deployment asked
        assert usdc.functions.balanceOf(merchant).call() == 700
        return
    expected = {
        "factory not allowed": "eip6492_factory_not_allowed",
        "wrong owner": "invalid_exact_evm_payload_signature",
        "no funds": "insufficient_funds",
    }[case]
    assert (verified["isValid"], verified["invalidReason"]) == (False, expected)
    assert (settled["success"], settled["errorReason"]) == (False, expected)
    assert w3.eth.get_code(wallet) == b"" and not OutboxTx.objects.exists()
    assert not Settlement.objects.exists()


def test_settling_needs_a_write_key_and_each_key_is_limited(chain, keys, settings):
    w3, usdc, _ = chain
    writer, reader = keys
    settings.X402_SETTLE_RATE_LIMIT_PER_MINUTE = 1
    body = signed(w3, usdc, requirements(usdc, Account.create().address), payer_account(4))

    forbidden = post(reader, "/x402/settle", body)
    assert forbidden.status_code == 403
    assert forbidden.json()["error"]["code"] == "insufficient_permissions"
    assert post(writer, "/x402/settle", body).status_code == 200
    limited = post(writer, "/x402/settle", body)
    assert limited.status_code == 429
    assert limited.json()["error"]["type"] == "rate_limit_error"
    assert Settlement.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("crash_at", ["after_sign", "after_broadcast"])
def test_a_settlement_whose_signing_worker_is_killed_is_submitted_once(
    devnets_registry, worker_env, start_worker, organization, settings, crash_at
):
    """kill -9 of the worker that signs the settlement, after it stored the signed bytes or after it
    broadcast them: the next worker finishes that same transaction, the payer is debited once, and the same
    settle request answers with it."""
    from tests.conftest import wait_for
    from tests.devnets import poll_until

    settings.X402_SETTLE_WAIT_SECONDS = 0
    chain, deployment = devnets_registry[0]
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    usdc = w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"])
    _, raw = make_api_key(organization, permissions=["write"], name="settler")
    writer = client_for(raw)
    payer, merchant = payer_account(8), Account.create().address
    body = signed(w3, usdc, requirements(usdc, merchant, amount=4321), payer)
    before = usdc.functions.balanceOf(payer.address).call()
    nonce_before = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    doomed = start_worker(**worker_env, OUTBOX_CRASH_AT=crash_at)

    assert post(writer, "/x402/settle", body).json()["errorReason"] == "settlement_pending"
    wait_for(lambda: doomed.process.poll() is not None, timeout=60)  # killed mid-send
    survivor = start_worker(**worker_env, OUTBOX_RESEND_AFTER_SECONDS="0")
    poll_until(survivor.queue, lambda: Settlement.objects.get().status == "settled")
    answer = post(writer, "/x402/settle", body).json()

    tx = OutboxTx.objects.get()
    assert (answer["success"], answer["transaction"]) == (True, tx.tx_hash)
    assert usdc.functions.balanceOf(merchant).call() == 4321
    assert usdc.functions.balanceOf(payer.address).call() == before - 4321  # debited once
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == nonce_before + 1  # one transaction sent


def test_staff_see_each_settlement_in_the_admin_and_change_none(chain, keys, staff):
    w3, usdc, _ = chain
    writer, _ = keys
    payer = payer_account(5)
    post(writer, "/x402/settle", signed(w3, usdc, requirements(usdc, Account.create().address), payer))
    row = Settlement.objects.get()

    listed = staff.get("/admin/facilitator/settlement/")
    shown = staff.get(f"/admin/facilitator/settlement/{row.pk}/change/")

    assert listed.status_code == 200 and payer.address in listed.content.decode()
    assert shown.status_code == 200 and row.nonce in shown.content.decode()
    assert staff.get("/admin/facilitator/settlement/add/").status_code == 403
    assert staff.post(f"/admin/facilitator/settlement/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Settlement.objects.filter(pk=row.pk).exists()


@pytest.mark.unreconciled("the chain has no node that answers")
def test_a_chain_whose_node_does_not_answer_is_an_unexpected_verify_error_not_a_500(chain, keys, settings):
    w3, usdc, _ = chain
    writer, reader = keys
    body = signed(w3, usdc, requirements(usdc, Account.create().address), payer_account())
    chains = [dict(entry) for entry in settings.CHAINS]
    for entry in chains:
        if entry["chain_id"] == 31337:
            entry["rpc_urls"] = ["http://127.0.0.1:9"]  # nothing listens there
    settings.CHAINS = chains  # the registry follows settings.CHAINS

    verified = post(reader, "/x402/verify", body)
    settled = post(writer, "/x402/settle", body)

    assert (verified.status_code, verified.json()["invalidReason"]) == (200, "unexpected_verify_error")
    assert (settled.status_code, settled.json()["errorReason"]) == (200, "unexpected_verify_error")
    assert not Settlement.objects.exists() and not OutboxTx.objects.exists()
