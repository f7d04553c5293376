"""The token registry: lookups, and loading token lists (the common token-list JSON format) into it."""

from __future__ import annotations

import json
import time
from decimal import Decimal, InvalidOperation, localcontext
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from chains.evm import is_address, to_checksum_address
from chains.models import Token
from core.errors import InvalidRequest


class TokenListError(ValueError):
    pass


# token_get's answers, kept TOKEN_CACHE_SECONDS per process: one checkout asks for the same two tokens
# about seven times (validation, quote, fees, the worth check). A token saved or deleted here clears it
# (chains.apps); another process sees the change within that time. Callers never modify what they get.
TOKEN_CACHE_SECONDS = 2.0
_tokens: dict[tuple[int, str], tuple[float, Token | None]] = {}


def token_get(*, chain_id: int, address: str) -> Token | None:
    """The registry's token at `address` on a chain (any case); one indexed query, or none when this
    process read it in the last TOKEN_CACHE_SECONDS."""
    if not is_address(address):
        return None
    key, now = (chain_id, address.lower()), time.monotonic()
    found = _tokens.get(key)
    if found is not None and found[0] > now:
        return found[1]
    token = Token.objects.filter(chain_id=chain_id, address=to_checksum_address(address)).first()
    if len(_tokens) > 8192:
        _tokens.clear()
    _tokens[key] = (now + TOKEN_CACHE_SECONDS, token)
    return token


@receiver(post_save, sender=Token, dispatch_uid="chains.tokens.saved")
@receiver(post_delete, sender=Token, dispatch_uid="chains.tokens.deleted")
def tokens_forget(**_signal) -> None:
    """Drop what token_get keeps (a token was saved or deleted in this process)."""
    _tokens.clear()


def amount_usd(token: Token, amount: int) -> Decimal:
    """What `amount` (smallest units) of a registry token is worth at its reference price; 0 without one.
    Exact for any uint256: the context is wide enough for 78 digits and a price."""
    if token.usd_price is None:
        return Decimal(0)
    with localcontext() as context:
        context.prec = 120
        return Decimal(amount).scaleb(-token.decimals) * token.usd_price


def check_amount_worth(*, chain_id: int, address: str, amount: int, field: str) -> None:
    """Refuse (400 naming `field`) an amount worth more than MAX_PAYMENT_USD at the token's reference price:
    no payment is that large, and every figure derived from it (fees, points, USD totals) must fit."""
    token = token_get(chain_id=chain_id, address=address)
    if token is not None and amount_usd(token, amount) > settings.MAX_PAYMENT_USD:
        raise InvalidRequest(
            f"is worth more than {settings.MAX_PAYMENT_USD:,} USD, more than any payment this service takes.",
            field=field,
        )


def tokens_by_chain_and_address(pairs: list[tuple[int, str]]) -> dict[tuple[int, str], Token]:
    """The registry's tokens for (chain id, address) pairs, keyed by (chain id, lowercase address); one query."""
    match = Q()  # addresses are stored checksummed: an exact match uses the (chain_id, address) index
    for chain_id, address in pairs:
        match |= Q(chain_id=chain_id, address=to_checksum_address(address))
    return {(t.chain_id, t.address.lower()): t for t in Token.objects.filter(match)} if pairs else {}


def _token_fields(entry: dict, index: int) -> dict:
    where = f"tokens[{index}]"
    try:
        chain_id, address, symbol, name, decimals = (
            entry["chainId"],
            entry["address"],
            entry["symbol"],
            entry["name"],
            entry["decimals"],
        )
    except (KeyError, TypeError):
        raise TokenListError(f"{where}: chainId, address, symbol, name and decimals are required") from None
    if not isinstance(chain_id, int) or chain_id < 1 or not is_address(address):
        raise TokenListError(f"{where}: chainId must be a positive integer and address an EVM address")
    if not isinstance(decimals, int) or not 0 <= decimals <= 255:
        raise TokenListError(f"{where}: decimals must be an integer from 0 to 255")
    price = (entry.get("extensions") or {}).get("usdPrice")  # a token list's extensions: usdPrice, eip3009,
    # eip712Name, eip712Version (the EIP-712 domain that EIP-3009 signatures commit to)
    try:
        usd_price = Decimal(str(price)) if price is not None else None
    except InvalidOperation:
        raise TokenListError(f"{where}: extensions.usdPrice must be a number") from None
    extensions = entry.get("extensions") or {}
    eip3009 = extensions.get("eip3009", False)
    domain_name, domain_version = extensions.get("eip712Name", ""), extensions.get("eip712Version", "")
    if (
        not isinstance(eip3009, bool)
        or not isinstance(domain_name, str)
        or not isinstance(domain_version, str)
    ):
        raise TokenListError(
            f"{where}: extensions.eip3009 must be true or false, eip712Name and eip712Version text"
        )
    if eip3009 and not (domain_name and domain_version):
        raise TokenListError(f"{where}: a token with extensions.eip3009 needs eip712Name and eip712Version")
    return {
        "chain_id": chain_id,
        "address": to_checksum_address(address),
        "symbol": str(symbol)[:32],
        "name": str(name)[:100],
        "decimals": decimals,
        "logo_uri": str(entry.get("logoURI") or "")[:500],
        "usd_price": usd_price,
        "eip3009": eip3009,
        "eip712_name": domain_name[:100],
        "eip712_version": domain_version[:20],
    }


@transaction.atomic
def token_list_load(path: Path) -> tuple[int, int]:
    """Upsert every token of a token list; returns (created, updated). All or nothing."""
    try:
        document = json.loads(Path(path).read_text())
        entries = document["tokens"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TokenListError(f"{path}: not a token list ({exc.__class__.__name__})") from exc
    created = updated = 0
    for index, entry in enumerate(entries):
        fields = _token_fields(entry, index)
        _, was_created = Token.objects.update_or_create(
            chain_id=fields.pop("chain_id"), address=fields.pop("address"), defaults=fields
        )
        created += was_created
        updated += not was_created
    return created, updated
