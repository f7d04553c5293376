"""The x402 facilitator's requests, read for both protocol versions, and the reasons it answers with.

A verify or settle request is `{x402Version, paymentPayload, paymentRequirements}` (x402 specification v2,
section 7; v1 alike, with its own field names). Version 2 names networks in CAIP-2 (`eip155:8453`) and puts
the requirements the payer accepted in `paymentPayload.accepted`; version 1 names networks (`base`) and puts
`scheme` and `network` at the top of the payload, the amount in `maxAmountRequired`. Both carry the `exact`
scheme's EVM payload: `{signature, authorization: {from, to, value, validAfter, validBefore, nonce}}`.

`read_request` turns either into one `Payment`, or raises `Refused` with the specification's reason. The
reasons are the specification's (section 9) and, where it has none, the reference SDK's (`x402` on PyPI,
mechanisms/evm/constants.py), so a client reads them as it reads any facilitator's.

https://github.com/x402-foundation/x402/blob/main/specs/x402-specification-v2.md
https://github.com/x402-foundation/x402/blob/main/specs/schemes/exact/scheme_exact_evm.md
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chains.evm import is_address, to_checksum_address

SCHEME = "exact"

# The specification's reasons (section 9)...
INSUFFICIENT_FUNDS = "insufficient_funds"
VALID_AFTER = "invalid_exact_evm_payload_authorization_valid_after"
VALID_BEFORE = "invalid_exact_evm_payload_authorization_valid_before"
VALUE_MISMATCH = "invalid_exact_evm_payload_authorization_value_mismatch"
SIGNATURE = "invalid_exact_evm_payload_signature"
RECIPIENT_MISMATCH = "invalid_exact_evm_payload_recipient_mismatch"
INVALID_NETWORK = "invalid_network"
INVALID_PAYLOAD = "invalid_payload"
INVALID_REQUIREMENTS = "invalid_payment_requirements"
INVALID_SCHEME = "invalid_scheme"
UNSUPPORTED_SCHEME = "unsupported_scheme"
INVALID_VERSION = "invalid_x402_version"
TRANSACTION_STATE = "invalid_transaction_state"
UNEXPECTED_VERIFY = "unexpected_verify_error"
UNEXPECTED_SETTLE = "unexpected_settle_error"
# ... and the reference SDK's, where the specification names none.
NETWORK_MISMATCH = "network_mismatch"
NONCE_USED = "invalid_exact_evm_nonce_already_used"
NOT_EIP3009 = "invalid_exact_evm_eip3009_not_supported"
MISSING_DOMAIN = "missing_eip712_domain"
NAME_MISMATCH = "invalid_exact_evm_token_name_mismatch"
VERSION_MISMATCH = "invalid_exact_evm_token_version_mismatch"
SIMULATION_FAILED = "invalid_exact_evm_transaction_simulation_failed"
UNDEPLOYED_WALLET = "invalid_exact_evm_payload_undeployed_smart_wallet"
FACTORY_NOT_ALLOWED = "eip6492_factory_not_allowed"
SETTLEMENT_PENDING = "settlement_pending"

# Version 1's network names (the reference SDK's table, mechanisms/evm/v1/constants.py) for the chains this
# service may know; a chain without one is named `eip155:<id>` in version 1 too.
V1_NETWORKS = {
    "ethereum": 1,
    "base": 8453,
    "base-sepolia": 84532,
    "polygon": 137,
    "polygon-amoy": 80002,
    "avalanche": 43114,
    "avalanche-fuji": 43113,
    "abstract": 2741,
    "abstract-testnet": 11124,
    "iotex": 4689,
    "sei": 1329,
    "sei-testnet": 1328,
    "peaq": 3338,
    "story": 1513,
    "educhain": 656476,
    "skale-base-sepolia": 1444673419,
    "megaeth": 4326,
    "monad": 143,
    "monad-testnet": 10143,
    "stable": 988,
    "stable-testnet": 2201,
    "celo": 42220,
    "flare": 14,
}
V1_NAMES = {chain_id: name for name, chain_id in V1_NETWORKS.items()}

_HEX32 = re.compile(r"0x[0-9a-fA-F]{64}")
_HEX = re.compile(r"0x(?:[0-9a-fA-F]{2})+")
_UINT = re.compile(r"[0-9]{1,78}")


class Refused(Exception):
    """A request the facilitator refuses: `reason` is the protocol's word, `message` says what was wrong."""

    def __init__(self, reason: str, message: str, *, payer: str | None = None) -> None:
        super().__init__(message)
        self.reason, self.message, self.payer = reason, message, payer


@dataclass(frozen=True)
class Authorization:
    payer: str
    to: str
    value: int
    valid_after: int
    valid_before: int
    nonce: str  # 0x and 64 lowercase hex digits

    def as_message(self) -> dict[str, Any]:
        return {
            "from": self.payer,
            "to": self.to,
            "value": self.value,
            "validAfter": self.valid_after,
            "validBefore": self.valid_before,
            "nonce": self.nonce,
        }


@dataclass(frozen=True)
class Payment:
    """A verify or settle request, whatever its version: the requirements and the payer's signed authorization."""

    version: int
    network: str  # as the request named it
    chain_id: int
    asset: str  # checksummed
    amount: int
    pay_to: str  # checksummed
    extra: dict[str, Any]
    authorization: Authorization
    signature: bytes


def network_name(chain_id: int, version: int) -> str:
    """How `version` of the protocol names a chain."""
    if version == 1 and chain_id in V1_NAMES:
        return V1_NAMES[chain_id]
    return f"eip155:{chain_id}"


def chain_of_network(network: Any, version: int) -> int | None:
    """The chain id a network identifier names (CAIP-2 in both versions, and version 1's names), or None."""
    if not isinstance(network, str):
        return None
    if version == 1 and network in V1_NETWORKS:
        return V1_NETWORKS[network]
    namespace, _, reference = network.partition(":")
    if namespace == "eip155" and reference.isdigit() and 0 < int(reference) < 2**63:
        return int(reference)
    return None


def _uint(value: Any, what: str, reason: str = INVALID_PAYLOAD) -> int:
    if isinstance(value, bool):
        raise Refused(reason, f"{what} must be a whole number (a string of digits)")
    if isinstance(value, int) and 0 <= value < 2**256:
        return value
    if isinstance(value, str) and _UINT.fullmatch(value) and int(value) < 2**256:
        return int(value)
    raise Refused(reason, f"{what} must be a whole number from 0 to 2**256 - 1, as a string of digits")


def uint_of(value: Any) -> int:
    """A whole number as the protocol writes it (a string of digits, or a JSON number); `Refused` if not."""
    return _uint(value, "authorization.value")


def _address(value: Any, what: str, reason: str = INVALID_PAYLOAD) -> str:
    if not isinstance(value, str) or not is_address(value):
        raise Refused(reason, f"{what} must be an EVM address")
    return to_checksum_address(value)


def _object(value: Any, what: str, reason: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Refused(reason, f"{what} must be a JSON object")
    return value


def _authorization(payload: dict[str, Any]) -> tuple[Authorization, bytes]:
    inner = _object(payload.get("payload"), "paymentPayload.payload", INVALID_PAYLOAD)
    if "permit2Authorization" in inner:
        raise Refused(INVALID_PAYLOAD, "this facilitator settles EIP-3009 authorizations, not Permit2's")
    raw = _object(inner.get("authorization"), "paymentPayload.payload.authorization", INVALID_PAYLOAD)
    signature = inner.get("signature")
    if not isinstance(signature, str) or not _HEX.fullmatch(signature):
        raise Refused(SIGNATURE, "paymentPayload.payload.signature must be 0x and hex bytes")
    nonce = raw.get("nonce")
    if not isinstance(nonce, str) or not _HEX32.fullmatch(nonce):
        raise Refused(INVALID_PAYLOAD, "authorization.nonce must be 0x and 64 hex digits")
    payer = _address(raw.get("from"), "authorization.from")
    authorization = Authorization(
        payer=payer,
        to=_address(raw.get("to"), "authorization.to"),
        value=_uint(raw.get("value"), "authorization.value"),
        valid_after=_uint(raw.get("validAfter"), "authorization.validAfter"),
        valid_before=_uint(raw.get("validBefore"), "authorization.validBefore"),
        nonce=nonce.lower(),
    )
    return authorization, bytes.fromhex(signature[2:])


def read_request(body: Any) -> Payment:
    """The payment a verify or settle request asks about; `Refused` for one that is not a well-formed request
    of either version, or whose payload does not match its own requirements' scheme and network."""
    body = _object(body, "the request body", INVALID_PAYLOAD)
    payload = _object(body.get("paymentPayload"), "paymentPayload", INVALID_PAYLOAD)
    requirements = _object(body.get("paymentRequirements"), "paymentRequirements", INVALID_REQUIREMENTS)
    version = body.get("x402Version", payload.get("x402Version"))
    if version not in (1, 2) or isinstance(version, bool):
        raise Refused(INVALID_VERSION, "x402Version must be 1 or 2")
    if payload.get("x402Version", version) != version:
        raise Refused(INVALID_VERSION, "paymentPayload.x402Version differs from the request's x402Version")
    authorization, signature = _authorization(payload)
    payer = authorization.payer
    if version == 2:
        accepted = _object(payload.get("accepted"), "paymentPayload.accepted", INVALID_PAYLOAD)
        chosen_scheme, chosen_network = accepted.get("scheme"), accepted.get("network")
        amount_field = "amount"
    else:
        chosen_scheme, chosen_network = payload.get("scheme"), payload.get("network")
        amount_field = "maxAmountRequired"
    if requirements.get("scheme") != SCHEME:
        raise Refused(UNSUPPORTED_SCHEME, "this facilitator settles the `exact` scheme only", payer=payer)
    if chosen_scheme != SCHEME:
        raise Refused(INVALID_SCHEME, "the payload's scheme is not the requirements' `exact`", payer=payer)
    network = requirements.get("network")
    chain_id = chain_of_network(network, version)
    if chain_id is None or not isinstance(network, str):
        raise Refused(INVALID_NETWORK, f"{network!r} is not an EVM network (eip155:<chain id>)", payer=payer)
    if chosen_network != network:
        raise Refused(NETWORK_MISMATCH, "the payload's network is not the requirements'", payer=payer)
    extra = requirements.get("extra") or {}
    if not isinstance(extra, dict):
        raise Refused(INVALID_REQUIREMENTS, "paymentRequirements.extra must be a JSON object", payer=payer)
    try:
        asset = _address(requirements.get("asset"), "paymentRequirements.asset", INVALID_REQUIREMENTS)
        pay_to = _address(requirements.get("payTo"), "paymentRequirements.payTo", INVALID_REQUIREMENTS)
        amount = _uint(
            requirements.get(amount_field), f"paymentRequirements.{amount_field}", INVALID_REQUIREMENTS
        )
    except Refused as exc:
        raise Refused(exc.reason, exc.message, payer=payer) from None
    if version == 2:
        for field, mine in (("asset", asset), ("payTo", pay_to)):
            theirs = accepted.get(field)
            if not isinstance(theirs, str) or theirs.lower() != mine.lower():
                raise Refused(
                    INVALID_PAYLOAD, f"paymentPayload.accepted.{field} is not the requirements'", payer=payer
                )
        if str(accepted.get("amount")) != str(amount):
            raise Refused(
                VALUE_MISMATCH, "paymentPayload.accepted.amount is not the requirements'", payer=payer
            )
    return Payment(
        version=version,
        network=network,
        chain_id=chain_id,
        asset=asset,
        amount=amount,
        pay_to=pay_to,
        extra=extra,
        authorization=authorization,
        signature=signature,
    )
