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
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from eth_abi import decode
from web3.exceptions import Web3Exception

from chains.client import web3_for
from chains.eip3009 import (
    balance_of_call_data,
)
from chains.outbox import outbox_submit, rpc_batch
from chains.watcher import look_back
from facilitator import protocol
from facilitator.models import PayerTurn, Settlement
from facilitator.outcomes import used_by
from facilitator.protocol import Payment, Refused
from facilitator.verification import SIGNER, Checked, check, matches_requirements

logger = logging.getLogger(__name__)


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
        matches_requirements(payment)
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
    found = used_by(
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
