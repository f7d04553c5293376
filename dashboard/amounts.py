"""Amounts and chains as a merchant reads them: `4.5 dUSDC`, `Devnet B`."""

from __future__ import annotations

from chains.registry import chain_get
from checkout.display import display_token, format_units


def token_amount(chain_id: int, address: str, amount) -> str:
    token = display_token(chain_id, address)
    if token is None or amount is None:
        return f"{amount} units" if amount is not None else "-"
    return f"{format_units(int(amount), token.decimals)} {token.symbol}"


def chain_name(chain_id: int) -> str:
    chain = chain_get(chain_id)
    return chain.name if chain else f"chain {chain_id}"
