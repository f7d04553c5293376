"""Checks that several platform resources' services share: the registry tokens a resource is paid in and
what its amounts are worth (each raises `core.errors.InvalidRequest` naming the field), and the stored
values of a write."""

from __future__ import annotations

from typing import Any

from chains.tokens import check_amount_worth, token_get
from core.errors import InvalidRequest

MAX_MILLIS = 253402300799999  # 9999-12-31T23:59:59.999Z: the last instant a datetime holds


def check_token(chain_id: int, token_address: str, *, param: str = "token_address") -> None:
    """A link or session is paid in a registry token: its decimals and price make the checkout's quote."""
    if token_get(chain_id=chain_id, address=token_address) is None:
        raise InvalidRequest(
            f"'{param}': {token_address} is not a token of the registry on chain {chain_id}.", field=param
        )


def check_amounts_worth(chain_id: int, token_address: str, amounts: dict[str, int | None]) -> None:
    """Each named amount of the token is worth at most MAX_PAYMENT_USD (chains.tokens.check_amount_worth)."""
    for param, amount in amounts.items():
        if amount is None:
            continue
        try:
            check_amount_worth(chain_id=chain_id, address=token_address, amount=int(amount), field=param)
        except InvalidRequest as exc:
            raise InvalidRequest(f"'{param}' {exc.message}", field=param) from None


def stored_values(data: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """The validated `fields` of a request as stored: plain dicts and lists, amounts in JSON as strings."""
    values = {name: data[name] for name in fields if name in data}
    if "form_schema" in values:
        values["form_schema"] = {"fields": [dict(field) for field in values["form_schema"]["fields"]]}
    if "shipping_options" in values:
        values["shipping_options"] = [
            {**dict(option), "amount": str(option["amount"])} for option in values["shipping_options"]
        ]
    if "branding" in values:
        values["branding"] = dict(values["branding"])
    return values
