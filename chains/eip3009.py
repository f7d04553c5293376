"""EIP-3009 (`transferWithAuthorization`) and the EIP-712 domain its signatures commit to.

A token that takes EIP-3009 (USDC and many stablecoins) moves a payer's tokens on a signature the payer made
off-chain: whoever submits it pays the gas. The registry records which tokens do, and their domain
(`chains.models.Token.eip3009`, `eip712_name`, `eip712_version`); `domain_problem` checks a domain against the
token's own `DOMAIN_SEPARATOR()` before staff record it, since a wrong name or version makes every signature
fail to verify.

https://eips.ethereum.org/EIPS/eip-3009, https://eips.ethereum.org/EIPS/eip-712
"""

from __future__ import annotations

from eth_abi import decode, encode
from eth_typing import HexStr
from eth_utils import keccak, to_checksum_address
from web3 import Web3
from web3.exceptions import Web3Exception

DOMAIN_TYPE = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
TRANSFER_WITH_AUTHORIZATION_TYPE = (
    "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,"
    "bytes32 nonce)"
)
AUTHORIZATION_FIELDS = [
    {"name": "from", "type": "address"},
    {"name": "to", "type": "address"},
    {"name": "value", "type": "uint256"},
    {"name": "validAfter", "type": "uint256"},
    {"name": "validBefore", "type": "uint256"},
    {"name": "nonce", "type": "bytes32"},
]


def domain_separator(*, name: str, version: str, chain_id: int, address: str) -> bytes:
    """The EIP-712 domain separator of a token with this name and version at `address` on `chain_id`."""
    return keccak(
        encode(
            ["bytes32", "bytes32", "bytes32", "uint256", "address"],
            [
                keccak(text=DOMAIN_TYPE),
                keccak(text=name),
                keccak(text=version),
                chain_id,
                to_checksum_address(address),
            ],
        )
    )


def _selector(signature: str) -> str:
    return "0x" + keccak(text=signature)[:4].hex()


def domain_problem(w3: Web3, *, address: str, name: str, version: str, chain_id: int) -> str | None:
    """Why the token at `address` does not take EIP-3009 signatures in this domain, or None when it does: its
    `DOMAIN_SEPARATOR()` must be this domain's, and it must answer `authorizationState`."""
    token = to_checksum_address(address)
    try:
        answer = bytes(w3.eth.call({"to": token, "data": HexStr(_selector("DOMAIN_SEPARATOR()"))}))
    except (Web3Exception, ValueError, OSError) as exc:
        return f"it does not answer DOMAIN_SEPARATOR() ({exc.__class__.__name__})"
    expected = domain_separator(name=name, version=version, chain_id=chain_id, address=token)
    if answer != expected:
        return (
            f"its DOMAIN_SEPARATOR() is 0x{answer.hex()}, not that of the domain {name!r} version {version!r} "
            f"on chain {chain_id} (0x{expected.hex()}): check the name and version"
        )
    try:
        state = bytes(
            w3.eth.call({"to": token, "data": HexStr(authorization_state_call_data(token, "0x" + "00" * 32))})
        )
        decode(["bool"], state)
    except (Web3Exception, ValueError, OSError) as exc:
        return (
            f"it does not answer authorizationState(address,bytes32) ({exc.__class__.__name__}): no EIP-3009"
        )
    return None


def authorization_typed_data(
    *, name: str, version: str, chain_id: int, token: str, authorization: dict
) -> dict:
    """The EIP-712 message a payer signs to authorize `authorization` (from, to, value, validAfter,
    validBefore, nonce) on the token at `token`: what `eth_signTypedData_v4` takes, and what is recovered."""
    return {
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"},
            ],
            "TransferWithAuthorization": AUTHORIZATION_FIELDS,
        },
        "primaryType": "TransferWithAuthorization",
        "domain": {
            "name": name,
            "version": version,
            "chainId": chain_id,
            "verifyingContract": to_checksum_address(token),
        },
        "message": {
            "from": to_checksum_address(authorization["from"]),
            "to": to_checksum_address(authorization["to"]),
            "value": int(authorization["value"]),
            "validAfter": int(authorization["validAfter"]),
            "validBefore": int(authorization["validBefore"]),
            "nonce": authorization["nonce"],
        },
    }


def typed_data_hash(typed_data: dict) -> bytes:
    """The EIP-712 hash of a typed message (what an EOA's signature, or a wallet's ERC-1271 check, is over)."""
    from eth_account.messages import encode_typed_data

    message = encode_typed_data(full_message=typed_data)
    return keccak(b"\x19" + message.version + message.header + message.body)


def sign_typed_data(typed_data: dict, private_key: str | bytes) -> str:
    """An EOA's signature of a typed message (0x, 65 bytes), as a wallet's `eth_signTypedData_v4` gives it."""
    from eth_account import Account
    from eth_account.messages import encode_typed_data

    signed = Account.sign_message(encode_typed_data(full_message=typed_data), private_key)
    return "0x" + bytes(signed.signature).hex()


def recover_signer(typed_data: dict, signature: bytes) -> str | None:
    """The address whose key made this 65-byte signature of the message, or None when it is no ECDSA signature."""
    from eth_account import Account
    from eth_account.messages import encode_typed_data

    try:
        return Account.recover_message(encode_typed_data(full_message=typed_data), signature=signature)
    except Exception:  # eth_keys raises several kinds for a malformed signature
        return None


AUTHORIZATION_USED_TOPIC = "0x" + keccak(text="AuthorizationUsed(address,bytes32)").hex()
_TRANSFER_VRS = (
    "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)"
)
_TRANSFER_BYTES = "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"


def transfer_call_data(authorization: dict, signature: bytes, *, vrs: bool) -> str:
    """The call data of `transferWithAuthorization` for this authorization: its (v, r, s) form, which every
    EIP-3009 token has, for an EOA's 65-byte signature; its `bytes` form (USDC v2.2 and later: ERC-1271
    wallets) otherwise."""
    head = [
        to_checksum_address(authorization["from"]),
        to_checksum_address(authorization["to"]),
        int(authorization["value"]),
        int(authorization["validAfter"]),
        int(authorization["validBefore"]),
        bytes.fromhex(str(authorization["nonce"])[2:]),
    ]
    types = ["address", "address", "uint256", "uint256", "uint256", "bytes32"]
    if vrs:
        v = signature[64] if signature[64] >= 27 else signature[64] + 27
        return (
            _selector(_TRANSFER_VRS)
            + encode(
                [*types, "uint8", "bytes32", "bytes32"], [*head, v, signature[:32], signature[32:64]]
            ).hex()
        )
    return _selector(_TRANSFER_BYTES) + encode([*types, "bytes"], [*head, signature]).hex()


def balance_of_call_data(owner: str) -> str:
    return _selector("balanceOf(address)") + encode(["address"], [to_checksum_address(owner)]).hex()


def authorization_state_call_data(authorizer: str, nonce: str) -> str:
    return (
        _selector("authorizationState(address,bytes32)")
        + encode(["address", "bytes32"], [to_checksum_address(authorizer), bytes.fromhex(nonce[2:])]).hex()
    )


def refusal_of(error: dict) -> tuple[str, str]:
    """(kind, words) for the JSON-RPC error of a simulated `transferWithAuthorization`: the kind is
    `signature`, `used` (used or cancelled), `time` (outside its window), `balance` or `other`, read from the
    token's revert (OpenZeppelin's custom errors, named by chains.reverts, or FiatToken's revert strings)."""
    from chains.reverts import describe_revert

    data = error.get("data")
    if isinstance(data, dict):
        data = data.get("data")
    words = describe_revert(data) if isinstance(data, str) and data.startswith("0x") else ""
    words = words or str(error.get("message") or "reverted")
    said = f"{words} {error.get('message') or ''}".lower()
    for kind, marks in (
        ("signature", ("invalidsignature", "invalid signature")),
        ("used", ("usedauthorization", "is used or canceled")),
        ("time", ("authorizationtime", "authorization is expired", "authorization is not yet valid")),
        ("balance", ("insufficientbalance", "exceeds balance")),
    ):
        if any(mark in said for mark in marks):
            return kind, words[:300]
    return "other", words[:300]
