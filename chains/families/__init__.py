"""The chain families the service speaks (chains.families.base.ChainFamily), by `Chain.family`: the one seam a
chain of another kind plugs into. `family_of(chain_id)` answers a chain's family; the watcher's scans and the
outbox's sends and its periodic passes are dispatched through it (chains.tasks), and a payment's deposit address is derived by it
(`deposit_address`). Every chain today is an EVM chain (chains.families.evm).

A new family is a module here implementing the protocol, a `Chain.Family` member (and its migration) and an
entry in `FAMILIES`; tests/chains/test_families.py checks every member has one.
"""

from __future__ import annotations

from chains.families.base import ChainFamily
from chains.families.evm import EVM
from chains.models import Chain as ChainRow
from chains.registry import chain_get, chains
from core.errors import InvalidRequest

FAMILIES: dict[str, ChainFamily] = {ChainRow.Family.EVM: EVM}


def family_of(chain_id: int) -> ChainFamily:
    """The family of a chain the registry knows (EVM for one it does not: its rows say nothing else)."""
    chain = chain_get(chain_id)
    return FAMILIES[chain.family if chain is not None else ChainRow.Family.EVM]


def others_than(name: str) -> list[int]:
    """The chains of every family but `name`'s: what its outbox passes leave to their own."""
    return [chain.chain_id for chain in chains() if chain.family != name]


def outbox_poll_all() -> int:
    """Each family's pass over the in-flight transactions of its chains; how many were looked at."""
    return sum(family.poll(skip_chains=others_than(name)) for name, family in FAMILIES.items())


def outbox_receipts_all() -> int:
    """Each family's pass over the receipts of its chains' broadcast transactions; how many were finished."""
    return sum(family.receipts(skip_chains=others_than(name)) for name, family in FAMILIES.items())


def deposit_address(*, chain_id: int, kind: str, identifier: str, field: str) -> str:
    """The deposit address of a payment on a chain; 400 naming `field` when the chain takes no payments.

    A payment is never offered on a chain where the service could not sweep
    what arrives: only chains with a `factory_address` that take payments do.
    """
    chain = chain_get(chain_id)
    if chain is None or not chain.accepts_payments:
        raise InvalidRequest(
            f"payments are not taken on chain {chain_id}: the service has no deposit factory there.",
            field=field,
        )
    return FAMILIES[chain.family].deposit_address(chain, kind=kind, identifier=identifier)


__all__ = [
    "FAMILIES",
    "ChainFamily",
    "deposit_address",
    "family_of",
    "others_than",
    "outbox_poll_all",
    "outbox_receipts_all",
]
