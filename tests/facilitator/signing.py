"""A payer's EIP-3009 authorization of a devnet dUSDC payment, signed as a wallet signs it (tests only)."""

from __future__ import annotations

import secrets
import time

from chains.eip3009 import authorization_typed_data, sign_typed_data


def authorize(payer, *, to: str, value, token: str, chain_id: int = 31337, key=None, **changes) -> dict:
    """`{authorization, signature}`: `payer` (an eth_account account) authorizes `value` of the devnet dUSDC at
    `token` on `chain_id` to `to`, valid for five minutes from now with a fresh nonce; `changes` replace fields
    of the authorization before it is signed, `key` signs instead of the payer's."""
    authorization = {
        "from": payer.address,
        "to": to,
        "value": str(value),
        "validAfter": "0",
        "validBefore": str(int(time.time()) + 300),
        "nonce": "0x" + secrets.token_hex(32),
    } | changes
    typed = authorization_typed_data(
        name="Devnet USD Coin", version="2", chain_id=chain_id, token=token, authorization=authorization
    )
    return {"authorization": authorization, "signature": sign_typed_data(typed, key or payer.key)}
