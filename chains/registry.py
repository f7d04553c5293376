"""The chains the service knows (settings.CHAINS), checked once: ids, names, native coin, RPC, confirmations."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from chains.evm import deposit_address_for, is_address
from core.errors import InvalidRequest


@dataclass(frozen=True)
class Chain:
    chain_id: int
    name: str
    native_symbol: str
    native_decimals: int = 18
    rpc_url: str = ""
    confirmations: int = 12
    poll_interval_seconds: float = 12
    factory_address: str = ""
    explorer_url: str = ""
    devnet: bool = False
    max_fee_per_gas_gwei: float = 0  # the most the outbox bids per gas here; 0: OUTBOX_MAX_FEE_PER_GAS_GWEI


def _chain(entry: dict) -> Chain:
    try:
        chain = Chain(**entry)
    except TypeError as exc:
        raise ImproperlyConfigured(f"CHAINS entry {entry!r}: {exc}") from None
    if not isinstance(chain.chain_id, int) or chain.chain_id < 1:
        raise ImproperlyConfigured(f"CHAINS entry {entry!r}: chain_id must be a positive integer.")
    if not chain.name or not chain.native_symbol:
        raise ImproperlyConfigured(f"CHAINS entry {entry!r}: name and native_symbol are required.")
    if chain.confirmations < 0 or chain.poll_interval_seconds <= 0 or chain.max_fee_per_gas_gwei < 0:
        raise ImproperlyConfigured(
            f"CHAINS entry {entry!r}: confirmations >= 0, poll_interval_seconds > 0, max_fee_per_gas_gwei >= 0."
        )
    if chain.factory_address and not is_address(chain.factory_address):
        raise ImproperlyConfigured(f"CHAINS entry {entry!r}: factory_address is not an address.")
    return chain


@cache
def _registry() -> dict[int, Chain]:
    chains = [_chain(entry) for entry in settings.CHAINS]
    by_id = {chain.chain_id: chain for chain in chains}
    if len(by_id) != len(chains):
        raise ImproperlyConfigured("CHAINS lists a chain id twice.")
    return by_id


@receiver(setting_changed)
def _forget_registry(*, setting: str, **kwargs) -> None:
    if setting == "CHAINS":
        _registry.cache_clear()


def chains() -> list[Chain]:
    """Every chain of the registry, by id."""
    return sorted(_registry().values(), key=lambda c: c.chain_id)


def chain_get(chain_id: int) -> Chain | None:
    return _registry().get(chain_id)


def deposit_address(*, chain_id: int, kind: str, identifier: str, field: str) -> str:
    """The deposit address of a payment on a chain; 400 naming `field` when the chain has no deposit factory.

    A payment is never offered on a chain where the service could not sweep
    what arrives: only chains with a `factory_address` take payments.
    """
    chain = chain_get(chain_id)
    if chain is None or not chain.factory_address:
        raise InvalidRequest(
            f"payments are not taken on chain {chain_id}: the service has no deposit factory there.",
            field=field,
        )
    return deposit_address_for(factory=chain.factory_address, kind=kind, identifier=identifier)
