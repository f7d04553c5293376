"""Verifying a payer's EIP-3009 authorization as the `exact` scheme on EVM asks (scheme_exact_evm.md,
"Verification Logic"): the checks of the payload itself, then what the chain says in one JSON-RPC batch (the
nonce unused, the payer's balance, the transfer simulated from the account that will send it). `check`
answers `Checked` or raises `Refused`; `supported_kinds` is what `/x402/supported` lists."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from eth_abi import decode
from web3.exceptions import Web3Exception

from chains import erc6492
from chains.client import web3_for
from chains.eip3009 import (
    authorization_state_call_data,
    authorization_typed_data,
    balance_of_call_data,
    recover_signer,
    refusal_of,
    transfer_call_data,
)
from chains.evm import MULTICALL3_ADDRESS
from chains.keys import Signer
from chains.models import Token
from chains.outbox import rpc_batch
from chains.registry import Chain, chain_get, chains
from chains.signers import signer_address
from chains.testchains import acting_in_test_mode, test_chain_refusal
from chains.tokens import token_get
from facilitator import protocol
from facilitator.protocol import Payment, Refused

logger = logging.getLogger(__name__)
SIGNER = Signer.VAULT  # sends the settlements and pays their gas


@dataclass(frozen=True)
class Checked:
    """A payment that passed every check: its chain, token and the call that moves it (to the token, or to
    Multicall3 for a wallet that signed before it was deployed)."""

    payment: Payment
    chain: Chain
    token: Token
    to: str
    call_data: str


def _chain(payment: Payment) -> Chain:
    chain = chain_get(payment.chain_id)
    if chain is None or not chain.accepts_payments:
        raise Refused(
            protocol.INVALID_NETWORK,
            f"{payment.network} is not a chain this facilitator settles on",
            payer=payment.authorization.payer,
        )
    if acting_in_test_mode() and (refusal := test_chain_refusal(chain.chain_id)) is not None:
        raise Refused(protocol.INVALID_NETWORK, refusal, payer=payment.authorization.payer)
    return chain


def _token(payment: Payment) -> Token:
    payer = payment.authorization.payer
    token = token_get(chain_id=payment.chain_id, address=payment.asset)
    if token is None or not token.eip3009:
        raise Refused(
            protocol.NOT_EIP3009,
            f"{payment.asset} on {payment.network} is not a token this facilitator knows to take EIP-3009 "
            "authorizations",
            payer=payer,
        )
    name, version = payment.extra.get("name"), payment.extra.get("version")
    if name is not None and name != token.eip712_name:
        raise Refused(
            protocol.NAME_MISMATCH, f"the token's EIP-712 domain name is {token.eip712_name!r}", payer=payer
        )
    if version is not None and str(version) != token.eip712_version:
        raise Refused(
            protocol.VERSION_MISMATCH,
            f"the token's EIP-712 domain version is {token.eip712_version!r}",
            payer=payer,
        )
    return token


def _static_checks(payment: Payment, now: int) -> None:
    authorization, payer = payment.authorization, payment.authorization.payer
    matches_requirements(payment)
    margin = settings.X402_VALID_BEFORE_MARGIN_SECONDS
    if authorization.valid_before < now + margin:
        raise Refused(
            protocol.VALID_BEFORE,
            f"the authorization expires at {authorization.valid_before}, less than {margin} s from now ({now})",
            payer=payer,
        )
    if authorization.valid_after > now:
        raise Refused(
            protocol.VALID_AFTER,
            f"the authorization is valid only after {authorization.valid_after} (now {now})",
            payer=payer,
        )
    if payment.signature.endswith(erc6492.MAGIC) and erc6492.unwrap(payment.signature) is None:
        raise Refused(protocol.SIGNATURE, "the ERC-6492 signature does not decode", payer=payer)


_REFUSALS = {
    "signature": protocol.SIGNATURE,
    "used": protocol.NONCE_USED,
    "time": protocol.VALID_BEFORE,
    "balance": protocol.INSUFFICIENT_FUNDS,
    "other": protocol.SIMULATION_FAILED,
}


def check(payment: Payment) -> Checked:
    """The payment, checked as `verify` does; `Refused` with the first reason it fails."""
    chain = _chain(payment)
    token = _token(payment)
    _static_checks(payment, int(time.time()))
    authorization, payer = payment.authorization, payment.authorization.payer
    typed = authorization_typed_data(
        name=token.eip712_name,
        version=token.eip712_version,
        chain_id=payment.chain_id,
        token=token.address,
        authorization=authorization.as_message(),
    )
    wrapped = erc6492.unwrap(payment.signature)
    signature = wrapped.signature if wrapped else payment.signature
    eoa = wrapped is None and len(signature) == 65 and recover_signer(typed, signature) == payer
    call_data = transfer_call_data(authorization.as_message(), signature, vrs=eoa)
    deployable = wrapped is not None and wrapped.factory.lower() in settings.X402_ERC6492_FACTORIES
    sender = signer_address(SIGNER)
    calls: list[tuple[str, list[Any]]] = [
        (
            "eth_call",
            [
                {"to": token.address, "data": authorization_state_call_data(payer, authorization.nonce)},
                "latest",
            ],
        ),
        ("eth_call", [{"to": token.address, "data": balance_of_call_data(payer)}, "latest"]),
        ("eth_getCode", [payer, "latest"]),
        ("eth_call", [{"from": sender, "to": token.address, "data": call_data}, "latest"]),
    ]
    if deployable:
        assert wrapped is not None
        simulation = erc6492.deploy_and_call_data(
            wrapped, target=token.address, data=call_data, call_may_fail=True
        )
        calls += [
            ("eth_getCode", [MULTICALL3_ADDRESS, "latest"]),
            ("eth_call", [{"from": sender, "to": MULTICALL3_ADDRESS, "data": simulation}, "latest"]),
        ]
    try:
        used, balance, code, simulated, *through_factory = rpc_batch(web3_for(chain), calls)
        nonce_used = decode(["bool"], bytes.fromhex(used["result"][2:]))[0]
        held = decode(["uint256"], bytes.fromhex(balance["result"][2:]))[0]
        wallet = _has_code(code)
        if not wallet and deployable:
            simulated = _deployed_then(through_factory, payment.network, payer)
    except (Web3Exception, KeyError, TypeError, ValueError, OSError) as exc:
        logger.warning("x402 verify on %s: the node's answers could not be read: %s", payment.network, exc)
        raise Refused(
            protocol.UNEXPECTED_VERIFY,
            f"the chain's node did not answer ({exc.__class__.__name__})",
            payer=payer,
        ) from None
    if wrapped is not None and not wallet and not deployable:
        raise Refused(
            protocol.FACTORY_NOT_ALLOWED,
            f"the payer's wallet is not deployed, and its factory {wrapped.factory} is not one this facilitator "
            "deploys wallets with",
            payer=payer,
        )
    if not eoa and not wallet and wrapped is None:
        raise Refused(protocol.SIGNATURE, "the signature is not the payer's", payer=payer)
    if nonce_used:
        raise Refused(protocol.NONCE_USED, "this authorization was used or cancelled already", payer=payer)
    if held < authorization.value:
        raise Refused(
            protocol.INSUFFICIENT_FUNDS,
            f"the payer holds {held}, less than {authorization.value}",
            payer=payer,
        )
    if "error" in simulated:
        kind, words = refusal_of(simulated["error"] or {})
        raise Refused(_REFUSALS[kind], f"transferWithAuthorization would revert: {words}", payer=payer)
    if wrapped is not None and not wallet:  # deployed and paid in one call
        deploy_and_pay = erc6492.deploy_and_call_data(wrapped, target=token.address, data=call_data)
        return Checked(payment, chain, token, to=MULTICALL3_ADDRESS, call_data=deploy_and_pay)
    return Checked(payment=payment, chain=chain, token=token, to=token.address, call_data=call_data)


def _has_code(answer: dict[str, Any]) -> bool:
    return answer["result"] not in ("0x", "0x0", "")


def _deployed_then(answers: list[dict[str, Any]], network: str, payer: str) -> dict[str, Any]:
    """The transfer's outcome after the wallet's deployment, simulated together through Multicall3, in the shape
    of an eth_call's answer (`{"error": {...}}` when the transfer would revert)."""
    multicall, outcome = answers
    if not _has_code(multicall):
        raise Refused(
            protocol.UNDEPLOYED_WALLET,
            f"{network} has no Multicall3 at {MULTICALL3_ADDRESS}, through which a wallet is deployed and paid",
            payer=payer,
        )
    if "error" in outcome:
        return outcome  # the factory's call may fail; Multicall3 itself failing is the node's word
    succeeded, data = erc6492.call_outcome(outcome["result"])
    return {"result": data} if succeeded else {"error": {"data": data, "message": "reverted"}}


def supported_kinds() -> dict[str, Any]:
    """The SupportedResponse: both versions of `exact` on each chain that takes payments and has a token with
    EIP-3009 in the registry, no extensions, and the vault as the signer that pays the gas."""
    taking = {
        chain.chain_id
        for chain in chains()
        if chain.accepts_payments and (chain.for_tests or not acting_in_test_mode())
    }
    with_tokens = sorted(
        set(Token.objects.filter(eip3009=True, chain_id__in=taking).values_list("chain_id", flat=True))
    )
    kinds = [
        {
            "x402Version": version,
            "scheme": protocol.SCHEME,
            "network": protocol.network_name(chain_id, version),
        }
        for version in (2, 1)
        for chain_id in with_tokens
    ]
    signer = signer_address(SIGNER)
    return {"kinds": kinds, "extensions": [], "signers": {"eip155:*": [signer] if signer else []}}


def matches_requirements(payment: Payment) -> None:
    """What an authorization must say of the requirements on every path, a replay included: their `payTo`
    and, exactly, their amount."""
    authorization, payer = payment.authorization, payment.authorization.payer
    if authorization.to != payment.pay_to:
        raise Refused(
            protocol.RECIPIENT_MISMATCH, "authorization.to is not the requirements' payTo", payer=payer
        )
    if authorization.value != payment.amount:
        raise Refused(
            protocol.VALUE_MISMATCH,
            f"authorization.value is {authorization.value}, the requirements ask for exactly {payment.amount}",
            payer=payer,
        )
