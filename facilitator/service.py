"""The x402 facilitator: verify a payer's EIP-3009 authorization, and settle it through the outbox.

`verify` checks what the `exact` scheme on EVM asks (scheme_exact_evm.md, "Verification Logic"): the token
takes EIP-3009 here and the requirements name its domain; the recipient, the amount (exactly) and the time
window; the signature (an EOA's by recovery; a contract wallet's, ERC-1271, by the token's own check in the
simulation; an undeployed wallet's, ERC-6492, by simulating its deployment by an allowed factory and the
transfer in one Multicall3 call, which is then what settle sends); then, in one JSON-RPC batch, whether the nonce is still unused, the payer's balance, and a
simulation of `transferWithAuthorization` from the account that will send it.

`settle` verifies again, then records the authorization (one `Settlement` per chain, token, payer and nonce)
and asks the outbox for its transaction (`x402:<id>:settle`, sent by the vault, which pays the gas; the
ledger books the gas as every outbox transaction's) in one database transaction: a process killed anywhere
leaves either nothing or the row and its one transaction. It waits for that transaction to be in a block
(X402_SETTLE_WAIT_SECONDS) and answers; asked again with the same payload it answers from the row. An
authorization that someone else submitted first is found by its `AuthorizationUsed` event and counted with
their transaction, once the chain shows that it moved what was authorized.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from eth_abi import decode
from web3.exceptions import Web3Exception

from chains import erc6492
from chains.client import web3_for
from chains.eip3009 import (
    AUTHORIZATION_USED_TOPIC,
    authorization_state_call_data,
    authorization_typed_data,
    balance_of_call_data,
    recover_signer,
    refusal_of,
    transfer_call_data,
)
from chains.evm import MULTICALL3_ADDRESS, to_checksum_address
from chains.keys import Signer, Step
from chains.models import OutboxTx, Token
from chains.outbox import outbox_submit, rpc_batch
from chains.registry import Chain, chain_get, chains
from chains.signers import signer_address
from chains.testchains import acting_in_test_mode, test_chain_refusal
from chains.tokens import token_get
from chains.watcher import look_back
from facilitator import protocol
from facilitator.models import PayerTurn, Settlement
from facilitator.protocol import Payment, Refused

logger = logging.getLogger(__name__)

SIGNER = Signer.VAULT  # sends the settlements and pays their gas
TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


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
    _matches_requirements(payment)
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


# --- answers ------------------------------------------------------------------------------------------------


def verify_answer(body: Any) -> dict[str, Any]:
    """The VerifyResponse for a request body: `{isValid, invalidReason?, invalidMessage?, payer}`."""
    try:
        payment = protocol.read_request(body)
        check(payment)
    except Refused as refused:
        return _invalid(refused)
    return {"isValid": True, "payer": payment.authorization.payer}


def _invalid(refused: Refused) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "isValid": False,
        "invalidReason": refused.reason,
        "invalidMessage": refused.message,
    }
    if refused.payer:
        answer["payer"] = refused.payer
    return answer


def failed(refused: Refused, network: str, transaction_hash: str = "") -> dict[str, Any]:
    """The SettleResponse of a settlement refused or failed."""
    answer: dict[str, Any] = {
        "success": False,
        "errorReason": refused.reason,
        "errorMessage": refused.message,
        "transaction": transaction_hash,
        "network": network,
    }
    if refused.payer:
        answer["payer"] = refused.payer
    return answer


def settlement_answer(row: Settlement, network: str) -> dict[str, Any]:
    """The SettleResponse a settlement gives, as it stands."""
    if row.status in (Settlement.Status.INCLUDED, Settlement.Status.SETTLED):
        return {
            "success": True,
            "payer": row.payer,
            "transaction": row.tx_hash,
            "network": network,
            "amount": str(row.value),
        }
    if row.status == Settlement.Status.FAILED:
        return failed(
            Refused(row.error_reason or protocol.TRANSACTION_STATE, row.error, payer=row.payer),
            network,
            row.tx_hash,
        )
    return failed(
        Refused(
            protocol.SETTLEMENT_PENDING,
            "the transaction is not in a block yet: ask again with the same payload for its outcome",
            payer=row.payer,
        ),
        network,
        row.tx_hash,
    )


def settle_answer(body: Any, *, organization_id: str | int, api_key_id: str | None) -> dict[str, Any]:
    """The SettleResponse for a request body: the payment settled once, whoever asks how often."""
    try:
        payment = protocol.read_request(body)
    except Refused as refused:
        return failed(refused, _network_of(body))
    row, refusal = settle(payment, organization_id=organization_id, api_key_id=api_key_id)
    if row is None:
        assert refusal is not None
        return failed(refusal, payment.network)
    return settlement_answer(row, payment.network)


def settle(
    payment: Payment,
    *,
    organization_id: str | int,
    api_key_id: str | None,
    prepare: Callable[[], None] | None = None,
) -> tuple[Settlement | None, Refused | None]:
    """(the settlement of `payment`, once it is in a block or after the wait; or None and why not). The same
    authorization again reads its row; one used elsewhere first is recorded with that transaction. `prepare`
    runs once, before the row: once the payment passed every check, before anything is sent, or once the
    chain shows the transfer someone else submitted (a payment link's order is made there, so that its
    deposit address is watched before the transfer or, submitted elsewhere, while it confirms); what it raises
    is the answer."""
    try:
        _matches_requirements(payment)
    except Refused as refused:
        return None, refused
    row = _existing(payment)
    if row is not None:
        refusal = _not_the_same(row, payment, organization_id)
        if refusal is not None:
            return None, refusal
    else:
        try:
            checked = check(payment)
        except Refused as refused:
            if refused.reason != protocol.NONCE_USED:
                return None, refused
            row = _submitted_elsewhere(
                payment, organization_id=organization_id, api_key_id=api_key_id, prepare=prepare
            )
            return (row, None) if row is not None else (None, refused)
        try:
            row = _record(checked, organization_id=organization_id, api_key_id=api_key_id, prepare=prepare)
        except Refused as refused:
            return None, refused
    return _wait(row), None


def _matches_requirements(payment: Payment) -> None:
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


def _not_the_same(row: Settlement, payment: Payment, organization_id: str | int) -> Refused | None:
    """Why a recorded settlement of this payer's nonce is not the answer to `payment`, or None when it is: a
    replay is answered only for the identical authorization and signature, asked by the organization that
    settled it. Any other use of a used nonce is refused as used, whatever it says and whoever asks."""
    authorization = payment.authorization
    same = (
        str(row.organization_id) == str(organization_id)
        and row.pay_to == authorization.to
        and int(row.value) == authorization.value
        and int(row.valid_after) == authorization.valid_after
        and int(row.valid_before) == authorization.valid_before
        and constant_time_compare(row.signature.lower(), "0x" + payment.signature.hex())
    )
    if same:
        return None
    return Refused(
        protocol.NONCE_USED,
        "this authorization's nonce was used by another authorization already",
        payer=authorization.payer,
    )


def _network_of(body: Any) -> str:
    """The network a request names, as it names it ("" when it names none): what a refusal answers with."""
    requirements = body.get("paymentRequirements") if isinstance(body, dict) else None
    network = requirements.get("network") if isinstance(requirements, dict) else None
    return network if isinstance(network, str) else ""


def _existing(payment: Payment) -> Settlement | None:
    return Settlement.objects.filter(
        chain_id=payment.chain_id,
        token=payment.asset,
        payer=payment.authorization.payer,
        nonce=payment.authorization.nonce,
    ).first()


def _fields(payment: Payment, *, organization_id: str | int, api_key_id: str | None) -> dict[str, Any]:
    authorization = payment.authorization
    return {
        "organization_id": organization_id,
        "api_key_id": api_key_id,
        "x402_version": payment.version,
        "chain_id": payment.chain_id,
        "token": payment.asset,
        "payer": authorization.payer,
        "pay_to": authorization.to,
        "value": authorization.value,
        "valid_after": authorization.valid_after,
        "valid_before": authorization.valid_before,
        "nonce": authorization.nonce,
        "signature": "0x" + payment.signature.hex(),
    }


def _stopped(api_key_id: str | None) -> Refused | None:
    """Why a key may not settle now: X402_REVERTED_PER_KEY of its settlements reverted on chain (each at the
    vault's gas) within the last X402_REVERTED_WINDOW_SECONDS; or None."""
    if api_key_id is None:
        return None
    since = timezone.now() - timedelta(seconds=settings.X402_REVERTED_WINDOW_SECONDS)
    reverted = (
        Settlement.objects.filter(
            api_key_id=api_key_id,
            status=Settlement.Status.FAILED,
            finished_at__gte=since,
            submitted_by_us=True,
        )
        .exclude(tx_hash="")
        .count()
    )
    if reverted < settings.X402_REVERTED_PER_KEY:
        return None
    return Refused(
        protocol.UNEXPECTED_SETTLE,
        f"{reverted} of this key's settlements reverted on chain in the last "
        f"{settings.X402_REVERTED_WINDOW_SECONDS} s, at the service's gas: it may settle again once the window "
        "has passed (verify first, and settle a payer's authorizations only while it holds what they move)",
    )


def _affordable(checked: Checked) -> None:
    """Under the payer's turn (`PayerTurn`, taken first): the payer holds what this authorization moves on top
    of what its settlements not yet in a block move, read from the chain now. `Refused` otherwise: the vault
    pays the gas of a transfer that reverts."""
    payment = checked.payment
    authorization = payment.authorization
    turn, _ = PayerTurn.objects.get_or_create(
        chain_id=payment.chain_id, token=payment.asset, payer=authorization.payer
    )
    PayerTurn.objects.filter(pk=turn.pk).update(taken_at=timezone.now())  # held to the commit
    in_flight = sum(
        int(value)
        for value in Settlement.objects.filter(
            chain_id=payment.chain_id,
            token=payment.asset,
            payer=authorization.payer,
            status=Settlement.Status.PENDING,
        )
        .exclude(nonce=authorization.nonce)  # the same authorization asked twice at once: recorded once
        .values_list("value", flat=True)
    )
    if not in_flight:
        return  # `check` read the balance, and nothing of the payer's is in flight
    try:
        answer = rpc_batch(
            web3_for(checked.chain),
            [
                (
                    "eth_call",
                    [
                        {"to": checked.token.address, "data": balance_of_call_data(authorization.payer)},
                        "latest",
                    ],
                )
            ],
        )[0]
        held = decode(["uint256"], bytes.fromhex(answer["result"][2:]))[0]
    except (Web3Exception, KeyError, TypeError, ValueError, OSError) as exc:
        raise Refused(
            protocol.UNEXPECTED_SETTLE,
            f"the chain's node did not answer ({exc.__class__.__name__})",
            payer=authorization.payer,
        ) from None
    if held < in_flight + authorization.value:
        raise Refused(
            protocol.INSUFFICIENT_FUNDS,
            f"the payer holds {held}, of which {in_flight} are in its settlements not yet in a block: less than "
            f"{authorization.value} more",
            payer=authorization.payer,
        )


def _record(
    checked: Checked,
    *,
    organization_id: str | int,
    api_key_id: str | None,
    prepare: Callable[[], None] | None = None,
) -> Settlement:
    """The settlement's row and its outbox transaction, together, after `prepare` and in its transaction (a
    refusal leaves nothing of either); the existing row when another request recorded the same authorization
    first. `Refused` when the key is stopped or the payer cannot afford it with its settlements in flight."""
    payment = checked.payment
    if (stopped := _stopped(api_key_id)) is not None:
        raise stopped
    try:
        with transaction.atomic():
            if prepare is not None:
                prepare()
            _affordable(checked)
            row = Settlement.objects.create(
                **_fields(payment, organization_id=organization_id, api_key_id=api_key_id)
            )
            outbox_submit(
                key=row.outbox_key,
                chain_id=payment.chain_id,
                signer=SIGNER,
                to=checked.to,
                data=checked.call_data,
            )
    except IntegrityError:
        existing = _existing(payment)
        if existing is None:
            raise
        return existing
    logger.info(
        "x402: settling %s of %s from %s to %s on %s (%s)",
        payment.amount,
        payment.asset,
        payment.authorization.payer,
        payment.pay_to,
        payment.network,
        row.outbox_key,
    )
    return row


def _wait(row: Settlement) -> Settlement:
    """The row once its transaction is in a block or failed, or after X402_SETTLE_WAIT_SECONDS."""
    deadline = time.monotonic() + settings.X402_SETTLE_WAIT_SECONDS
    while True:
        row.refresh_from_db()
        if row.status != Settlement.Status.PENDING or time.monotonic() >= deadline:
            return row
        time.sleep(0.2)


def _submitted_elsewhere(
    payment: Payment,
    *,
    organization_id: str | int,
    api_key_id: str | None,
    prepare: Callable[[], None] | None = None,
) -> Settlement | None:
    """The authorization, used on chain by a transaction not ours: recorded as settled by that transaction once
    its receipt shows the transfer authorized (from, to, value on this token), after `prepare`; None if the
    chain shows none (it was cancelled, or the node does not say)."""
    authorization = payment.authorization
    found = _used_by(
        payment.chain_id,
        payment.asset,
        authorization.payer,
        authorization.to,
        authorization.value,
        authorization.nonce,
    )
    if found is None:
        return None
    tx_hash, block_number = found
    if prepare is not None:
        prepare()
    fields = _fields(payment, organization_id=organization_id, api_key_id=api_key_id) | {
        "status": Settlement.Status.SETTLED,
        "submitted_by_us": False,
        "tx_hash": tx_hash,
        "block_number": block_number,
        "finished_at": timezone.now(),
    }
    # The transfer may be in a block the watcher read before the order that owns the address (made by
    # `prepare`) was watched: it reads that block again for the address, so the transfer is its deposit.
    look_back(chain_id=payment.chain_id, address=authorization.to, from_block=block_number)
    try:
        with transaction.atomic():
            return Settlement.objects.create(**fields)
    except IntegrityError:
        return _existing(payment)


def _used_by(
    chain_id: int, token: str, payer: str, to: str, value: int, nonce: str
) -> tuple[str, int] | None:
    """(transaction hash, block) of a successful transaction that used this authorization (its
    `AuthorizationUsed` event) and moved what it authorized (a Transfer of `value` from `payer` to `to` on
    `token`), or None."""
    chain = chain_get(chain_id)
    if chain is None:
        return None
    w3 = web3_for(chain)
    try:
        logs = w3.eth.get_logs(
            {
                "address": to_checksum_address(token),
                "fromBlock": 0,
                "toBlock": "latest",
                "topics": [AUTHORIZATION_USED_TOPIC, "0x" + "0" * 24 + payer[2:].lower(), nonce],
            }
        )
        for log in logs:
            receipt = w3.eth.get_transaction_receipt(log["transactionHash"])
            if receipt["status"] == 1 and _moved(receipt, token, payer, to, value):
                return "0x" + bytes(log["transactionHash"]).hex(), int(receipt["blockNumber"])
    except (Web3Exception, ValueError, OSError, KeyError) as exc:
        logger.warning("x402: looking for the use of %s's nonce %s failed: %s", payer, nonce, exc)
    return None


def _moved(receipt: Any, token: str, payer: str, to: str, value: int) -> bool:
    for log in receipt["logs"]:
        topics = ["0x" + bytes(topic).hex() for topic in log["topics"]]
        if (
            log["address"].lower() == token.lower()
            and len(topics) == 3
            and topics[0] == TRANSFER_TOPIC
            and topics[1][-40:] == payer[2:].lower()
            and topics[2][-40:] == to[2:].lower()
            and int.from_bytes(bytes(log["data"]), "big") == value
        ):
            return True
    return False


# --- the outbox's news --------------------------------------------------------------------------------------


def settlement_of(tx: OutboxTx) -> Settlement | None:
    """The settlement an outbox transaction's key (`x402:<id>:settle`) names."""
    key = tx.parsed_key
    identifier = key.id if key.is_(Step.SETTLE) else ""
    try:
        return Settlement.objects.filter(pk=uuid.UUID(identifier)).first()
    except ValueError:
        return None


def settlement_included(tx: OutboxTx) -> None:
    """Its transaction is in a block and succeeded there: a settle request waiting on it answers now."""
    row = settlement_of(tx)
    if row is not None:
        Settlement.objects.filter(pk=row.pk, status=Settlement.Status.PENDING).update(
            status=Settlement.Status.INCLUDED, tx_hash=tx.tx_hash, block_number=tx.block_number
        )


def settlement_finished(tx: OutboxTx) -> None:
    """Its transaction finished: confirmed (settled), or failed (it would revert, or reverted). A failure whose
    authorization someone else used first is counted with their transaction."""
    row = settlement_of(tx)
    if row is None:
        logger.warning("x402: outbox %s finished, but no settlement has its key", tx.key)
        return
    if tx.status == OutboxTx.Status.MINED:
        Settlement.objects.filter(pk=row.pk).exclude(status=Settlement.Status.SETTLED).update(
            status=Settlement.Status.SETTLED,
            tx_hash=tx.tx_hash,
            block_number=tx.block_number,
            finished_at=timezone.now(),
        )
        return
    elsewhere = _used_by(row.chain_id, row.token, row.payer, row.pay_to, int(row.value), row.nonce)
    if elsewhere is not None:
        Settlement.objects.filter(pk=row.pk).update(
            status=Settlement.Status.SETTLED,
            submitted_by_us=False,
            tx_hash=elsewhere[0],
            block_number=elsewhere[1],
            finished_at=timezone.now(),
        )
        return
    Settlement.objects.filter(pk=row.pk).exclude(status=Settlement.Status.FAILED).update(
        status=Settlement.Status.FAILED,
        tx_hash=tx.tx_hash or "",
        error_reason=protocol.TRANSACTION_STATE,
        error=f"transferWithAuthorization failed: {tx.error}"[:500],
        finished_at=timezone.now(),
    )
