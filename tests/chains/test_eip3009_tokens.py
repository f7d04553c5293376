"""Devnet stablecoins that take signatures (EIP-3009, EIP-2612), on a real anvil node, and the token registry
that records which tokens do and their EIP-712 domain (issue 45, item 1)."""

from __future__ import annotations

import io
import json
import secrets
import time

import pytest
from django.core.management import CommandError, call_command
from eth_account import Account
from eth_utils import keccak
from web3 import Web3
from web3.exceptions import ContractLogicError

from chains.artifacts import artifact
from chains.devnet import deploy_contract, devnet_private_key
from chains.eip3009 import authorization_typed_data, domain_separator, refusal_of, sign_typed_data
from chains.models import Token
from chains.reverts import revert_of
from chains.tokens import TokenListError, token_list_load

pytestmark = pytest.mark.django_db

DOMAIN_FIELDS = [
    {"name": "name", "type": "string"},
    {"name": "version", "type": "string"},
    {"name": "chainId", "type": "uint256"},
    {"name": "verifyingContract", "type": "address"},
]


@pytest.fixture
def token(devnet_registry):
    chain, deployment = devnet_registry
    w3 = Web3(Web3.HTTPProvider(chain.rpc_url))
    return w3, w3.eth.contract(address=deployment["contracts"]["dUSDC"], abi=artifact("StableToken")["abi"])


def _authorization(*, payer, to, value, valid_before=None, nonce=None, valid_after=0):
    return {
        "from": payer.address,
        "to": to,
        "value": value,
        "validAfter": valid_after,
        "validBefore": valid_before if valid_before is not None else int(time.time()) + 600,
        "nonce": nonce or "0x" + secrets.token_hex(32),
    }


def _signed(w3, token_contract, authorization, key):
    typed = authorization_typed_data(
        name=token_contract.functions.name().call(),
        version=token_contract.functions.version().call(),
        chain_id=w3.eth.chain_id,
        token=token_contract.address,
        authorization=authorization,
    )
    return bytes.fromhex(sign_typed_data(typed, key)[2:])


def _args(authorization):
    return [
        authorization["from"],
        authorization["to"],
        authorization["value"],
        authorization["validAfter"],
        authorization["validBefore"],
        authorization["nonce"],
    ]


def _reverts(call) -> str:
    """What `call` reverted with, in the words of chains.reverts (custom errors by name)."""
    with pytest.raises(ContractLogicError) as caught:
        call()
    return revert_of(caught.value)


def _payer():
    return Account.from_key(devnet_private_key(1))


def test_dusdc_moves_a_payers_tokens_on_its_signature_once_whoever_submits_it(token):
    w3, usdc = token
    payer, submitter, to = _payer(), w3.eth.accounts[4], Account.create().address
    authorization = _authorization(payer=payer, to=to, value=1_234_567)
    signature = _signed(w3, usdc, authorization, payer.key)
    before = usdc.functions.balanceOf(payer.address).call()

    receipt = w3.eth.wait_for_transaction_receipt(
        usdc.functions.transferWithAuthorization(*_args(authorization), signature).transact(
            {"from": submitter}
        )
    )

    assert receipt.status == 1
    assert usdc.functions.balanceOf(to).call() == 1_234_567
    assert usdc.functions.balanceOf(payer.address).call() == before - 1_234_567
    assert usdc.functions.authorizationState(payer.address, authorization["nonce"]).call() is True
    replay = usdc.functions.transferWithAuthorization(*_args(authorization), signature)
    assert "ERC3009UsedAuthorization" in _reverts(lambda: replay.call({"from": submitter}))


def test_the_v_r_s_form_an_expired_window_another_signer_and_a_cancelled_nonce_are_refused(token):
    w3, usdc = token
    payer, to = _payer(), Account.create().address
    authorization = _authorization(payer=payer, to=to, value=5)
    signature = _signed(w3, usdc, authorization, payer.key)
    v, r, s = signature[64], signature[:32], signature[32:64]
    usdc.functions.transferWithAuthorization(
        *_args(authorization), v, r, s
    ).call()  # the (v, r, s) form: fine

    expired = _authorization(payer=payer, to=to, value=5, valid_before=int(time.time()) - 1)
    late = usdc.functions.transferWithAuthorization(*_args(expired), _signed(w3, usdc, expired, payer.key))
    assert "ERC3009InvalidAuthorizationTime" in _reverts(late.call)
    stranger = Account.create()
    forged = usdc.functions.transferWithAuthorization(
        *_args(authorization), _signed(w3, usdc, authorization, stranger.key)
    )
    assert "ERC3009InvalidSignature" in _reverts(forged.call)

    cancel = {
        "types": {
            "EIP712Domain": DOMAIN_FIELDS,
            "CancelAuthorization": [
                {"name": "authorizer", "type": "address"},
                {"name": "nonce", "type": "bytes32"},
            ],
        },
        "primaryType": "CancelAuthorization",
        "domain": {
            "name": usdc.functions.name().call(),
            "version": "2",
            "chainId": w3.eth.chain_id,
            "verifyingContract": usdc.address,
        },
        "message": {"authorizer": payer.address, "nonce": authorization["nonce"]},
    }
    w3.eth.wait_for_transaction_receipt(
        usdc.functions.cancelAuthorization(
            payer.address, authorization["nonce"], bytes.fromhex(sign_typed_data(cancel, payer.key)[2:])
        ).transact({"from": w3.eth.accounts[4]})
    )
    cancelled = usdc.functions.transferWithAuthorization(*_args(authorization), v, r, s)
    assert "ERC3009UsedAuthorization" in _reverts(cancelled.call)


def test_a_contract_wallet_signs_by_erc1271_and_permit_approves_by_signature(token):
    w3, usdc = token
    owner = Account.create()
    wallet = deploy_contract(w3, "SigningWallet", owner.address, sender=w3.eth.accounts[0])
    w3.eth.wait_for_transaction_receipt(
        usdc.functions.transfer(wallet.address, 100).transact({"from": w3.eth.accounts[1]})
    )
    to = Account.create().address
    authorization = _authorization(payer=owner, to=to, value=60) | {"from": wallet.address}

    w3.eth.wait_for_transaction_receipt(
        usdc.functions.transferWithAuthorization(
            *_args(authorization), _signed(w3, usdc, authorization, owner.key)
        ).transact({"from": w3.eth.accounts[4]})
    )
    assert (usdc.functions.balanceOf(wallet.address).call(), usdc.functions.balanceOf(to).call()) == (40, 60)

    payer, spender = _payer(), w3.eth.accounts[6]
    deadline = int(time.time()) + 600
    permit = {
        "types": {
            "EIP712Domain": DOMAIN_FIELDS,
            "Permit": [
                {"name": "owner", "type": "address"},
                {"name": "spender", "type": "address"},
                {"name": "value", "type": "uint256"},
                {"name": "nonce", "type": "uint256"},
                {"name": "deadline", "type": "uint256"},
            ],
        },
        "primaryType": "Permit",
        "domain": {
            "name": usdc.functions.name().call(),
            "version": "2",
            "chainId": w3.eth.chain_id,
            "verifyingContract": usdc.address,
        },
        "message": {
            "owner": payer.address,
            "spender": spender,
            "value": 777,
            "nonce": usdc.functions.nonces(payer.address).call(),
            "deadline": deadline,
        },
    }
    signature = bytes.fromhex(sign_typed_data(permit, payer.key)[2:])
    w3.eth.wait_for_transaction_receipt(
        usdc.functions.permit(
            payer.address, spender, 777, deadline, signature[64], signature[:32], signature[32:64]
        ).transact({"from": w3.eth.accounts[4]})
    )
    assert usdc.functions.allowance(payer.address, spender).call() == 777
    assert usdc.functions.DOMAIN_SEPARATOR().call() == domain_separator(
        name=usdc.functions.name().call(), version="2", chain_id=w3.eth.chain_id, address=usdc.address
    )


def test_the_devnet_token_list_records_which_tokens_take_signatures_and_their_domain(devnet_registry):
    usdc = Token.objects.get(chain_id=31337, symbol="dUSDC")
    weth = Token.objects.get(chain_id=31337, symbol="dWETH")
    assert (usdc.eip3009, usdc.eip712_name, usdc.eip712_version) == (True, "Devnet USD Coin", "2")
    assert (weth.eip3009, weth.eip712_name, weth.eip712_version) == (False, "", "")


@pytest.mark.parametrize(
    ("extensions", "message"),
    [
        ({"eip3009": True}, "needs eip712Name and eip712Version"),
        ({"eip3009": "yes", "eip712Name": "X", "eip712Version": "1"}, "must be true or false"),
        ({"eip3009": True, "eip712Name": 5, "eip712Version": "1"}, "must be true or false"),
    ],
)
def test_a_token_list_with_a_bad_signature_entry_is_refused_whole(tmp_path, extensions, message):
    good = {"chainId": 1, "address": "0x" + "11" * 20, "symbol": "A", "name": "A", "decimals": 6}
    bad = good | {"address": "0x" + "22" * 20, "extensions": extensions}
    path = tmp_path / "list.json"
    path.write_text(json.dumps({"tokens": [good, bad]}))
    with pytest.raises(TokenListError, match=message):
        token_list_load(path)
    assert not Token.objects.filter(chain_id=1).exists()


def _chains_token(*args):
    out = io.StringIO()
    call_command("chains", "token", *args, stdout=out)
    return out.getvalue()


def test_staff_record_a_tokens_domain_only_as_the_token_itself_answers_it(devnet_registry):
    _, deployment = devnet_registry
    usdc, weth = deployment["contracts"]["dUSDC"], deployment["contracts"]["dWETH"]
    Token.objects.filter(chain_id=31337, address=usdc).update(
        eip3009=False, eip712_name="", eip712_version=""
    )

    with pytest.raises(CommandError, match="not that of the domain 'Devnet USD Coin' version '1'"):
        _chains_token("31337", usdc, "--eip3009", "--eip712-name", "Devnet USD Coin", "--eip712-version", "1")
    with pytest.raises(CommandError, match="DOMAIN_SEPARATOR"):
        _chains_token(
            "31337", weth, "--eip3009", "--eip712-name", "Devnet Wrapped Ether", "--eip712-version", "1"
        )
    with pytest.raises(CommandError, match="needs --eip712-name and --eip712-version"):
        _chains_token("31337", usdc, "--eip3009")
    with pytest.raises(CommandError, match="no token at"):
        _chains_token("31337", "0x" + "33" * 20, "--no-eip3009")
    assert Token.objects.get(chain_id=31337, address=usdc).eip3009 is False  # nothing was written

    said = _chains_token(
        "31337", usdc, "--eip3009", "--eip712-name", "Devnet USD Coin", "--eip712-version", "2"
    )

    assert "takes EIP-3009 signatures in the domain 'Devnet USD Coin' version '2'" in said
    row = Token.objects.get(chain_id=31337, address=usdc)
    assert (row.eip3009, row.eip712_name, row.eip712_version) == (True, "Devnet USD Coin", "2")
    _chains_token("31337", usdc, "--no-eip3009")
    assert Token.objects.get(chain_id=31337, address=usdc).eip3009 is False


def test_staff_set_a_tokens_domain_in_the_admin_and_a_missing_one_is_named_beside_its_field(staff, tokens):
    token = Token.objects.filter(eip3009=False).exclude(address="0x" + "0" * 40).first()
    url = f"/admin/chains/token/{token.pk}/change/"
    form = {
        "chain_id": token.chain_id,
        "address": token.address,
        "symbol": token.symbol,
        "name": token.name,
        "decimals": token.decimals,
        "logo_uri": token.logo_uri,
        "usd_price": token.usd_price or "",
        "eip3009": "on",
        "eip712_name": "USD Coin",
        "eip712_version": "",
    }
    response = staff.post(url, form)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["eip712_version"]
    assert Token.objects.get(pk=token.pk).eip3009 is False

    response = staff.post(url, form | {"eip712_version": "2"})
    assert response.status_code == 302
    token.refresh_from_db()
    assert (token.eip3009, token.eip712_name, token.eip712_version) == (True, "USD Coin", "2")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"message": "execution reverted: FiatTokenV2: invalid signature"}, "signature"),
        ({"message": "execution reverted: FiatTokenV2: authorization is used or canceled"}, "used"),
        ({"message": "execution reverted: FiatTokenV2: authorization is expired"}, "time"),
        ({"message": "execution reverted: ERC20: transfer amount exceeds balance"}, "balance"),
        (
            {
                "message": "execution reverted",
                "data": "0x" + keccak(text="ERC3009InvalidSignature()")[:4].hex(),
            },
            "signature",
        ),
        ({"message": "execution reverted", "data": {"data": "0xdeadbeef"}}, "other"),
    ],
)
def test_a_simulated_transfers_revert_is_read_from_usdcs_strings_and_openzeppelins_errors(error, kind):
    found, words = refusal_of(error)
    assert found == kind
    assert words
