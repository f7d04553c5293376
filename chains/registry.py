"""The chains the service knows: rows of `chains.Chain`, read once into an immutable in-process registry.

A lookup (`chain_get`, `chains`) is a dictionary read. At most once every
REGISTRY_RECHECK_SECONDS a process asks the database whether the rows changed
(one indexed aggregate: their count and latest `updated_at`) and reloads them
if so, so a chain added, edited or disabled in the admin or with `manage.py
chains` reaches every web process and worker within that time; the process
that made the change sees it at once.

`CHAINS` (settings, from the environment) is the seed: `chains_seed` creates
the rows it names that do not exist and keeps the rows it created in step with
it, but never touches a row staff added or edited (`source = staff`). It runs
after `migrate` and when a process finds no row at all, so a deployment that
configured its chains in CHAINS keeps working unchanged.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Count, Max
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from chains.evm import is_address, to_checksum_address

REGISTRY_RECHECK_SECONDS = (
    1.0  # the suite sets it longer: a query-count test must not see a recheck by chance
)


@dataclass(frozen=True)
class Chain:
    chain_id: int
    name: str
    native_symbol: str
    native_decimals: int = 18
    rpc_urls: tuple[str, ...] = ()
    confirmations: int = 12
    front_confirmations: int | None = None  # delivery from inventory on first sight (chains.watcher.sight)
    poll_interval_seconds: float = 12
    factory_address: str = ""
    explorer_url: str = ""
    devnet: bool = False
    testnet: bool = False
    max_fee_per_gas_gwei: float = 0  # the most the outbox bids per gas here; 0: OUTBOX_MAX_FEE_PER_GAS_GWEI
    takes_payments: bool = True
    max_lag_blocks: int = 10
    traces: bool = False
    family: str = "evm"  # how the service talks to it (chains.models.Chain.Family, chains.families)
    vault_gas_threshold: int = 0
    solver_gas_threshold: int = 0
    source: str = field(default="staff", compare=False)

    @property
    def rpc_url(self) -> str:
        """The preferred RPC URL ('' when none): where devnet tooling talks to its node."""
        return self.rpc_urls[0] if self.rpc_urls else ""

    def confirmed_through(self, head: int) -> int:
        """The last block with the chain's `confirmations` at this head: a block counts itself, as a wallet counts
        (block N at head N has one confirmation). The watcher, the outbox and the readers all ask this."""
        return head - max(self.confirmations, 1) + 1

    @property
    def sights_early(self) -> bool:
        """Whether a payment here may be delivered before it is confirmed (`front_confirmations` below
        `confirmations`): the watcher then reads the blocks above the confirmed ones too."""
        return self.front_confirmations is not None and self.front_confirmations < max(self.confirmations, 1)

    def sighted_through(self, head: int) -> int:
        """The last block with `front_confirmations` at this head (the confirmed end when none is set)."""
        if not self.sights_early:
            return self.confirmed_through(head)
        return head - max(self.front_confirmations or 1, 1) + 1

    @property
    def for_tests(self) -> bool:
        """Whether test-mode organizations may transact here: a devnet or a public test network."""
        return self.devnet or self.testnet

    @property
    def accepts_payments(self) -> bool:
        """Whether a payment may be offered here: it takes payments and has a deposit factory."""
        return self.takes_payments and bool(self.factory_address)


class ChainError(ValueError):
    """A chain's configuration that cannot be used; its message says which field and why."""


FIELDS = {f.name for f in Chain.__dataclass_fields__.values()} - {"source"}


def _int(entry: dict, name: str, *, minimum: int) -> int:
    value = entry[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ChainError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return value


def _number(entry: dict, name: str, *, positive: bool) -> float:
    value = entry[name]
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value < 0
        or (positive and value == 0)
    ):
        raise ChainError(f"{name} must be a number {'>' if positive else '>='} 0, not {value!r}")
    return float(value)


def _front_confirmations(values: dict) -> int | None:
    """1 (the payment in its block) up to the chain's confirmations, or None. 0, the payment seen in the
    pool, is refused: a pending ERC-20 transfer's logs are not known before its block."""
    value = values.get("front_confirmations")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ChainError(
            f"front_confirmations must be an integer >= 1 (1: the payment in its block), not {value!r}; "
            "delivery on a payment seen only in the pool (0) is not offered"
        )
    if value > max(_int(values, "confirmations", minimum=0), 1):
        raise ChainError("front_confirmations must not exceed confirmations")
    return value


def rpc_url_check(url: object) -> str:
    """An http(s) URL with a host, or ChainError (the message never repeats a URL's path or query: keys)."""
    if not isinstance(url, str) or not url.strip():
        raise ChainError("an RPC URL must be a non-empty string")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ChainError(f"RPC URL {parts.scheme or '?'}://{parts.hostname or '?'}/... is not an http(s) URL")
    return url.strip()


def _where(values: dict[str, Any]) -> tuple[str, str]:
    """The entry's deposit factory and explorer URL, and its family, checked."""
    from chains.models import Chain as ChainRow

    factory = values["factory_address"] or ""
    if factory and (not is_address(factory) or int(factory, 16) == 0):
        raise ChainError(f"factory_address {factory!r} is not an address")
    explorer = values["explorer_url"] or ""
    if explorer and urlsplit(explorer).scheme not in ("http", "https"):
        raise ChainError("explorer_url must be an http(s) URL")
    families = ChainRow.Family.values  # chains.families implements each
    if values["family"] not in families:
        raise ChainError(f"family must be one of: {', '.join(families)}")
    return factory, explorer


def chain_from_entry(entry: dict[str, Any], *, source: str = "staff") -> Chain:
    """A checked chain from a registry entry (the CHAINS seed, `chains add`, the admin); ChainError names
    what is wrong. `rpc_url` (one URL) is read as `rpc_urls` of one."""
    if not isinstance(entry, dict):
        raise ChainError(f"a chain entry must be an object, not {type(entry).__name__}")
    entry = dict(entry)
    if "rpc_url" in entry:
        if "rpc_urls" in entry:
            raise ChainError("give rpc_url (one URL) or rpc_urls (a list), not both")
        single = entry.pop("rpc_url")
        entry["rpc_urls"] = [single] if single else []
    unknown = set(entry) - FIELDS - {"source"}
    if unknown:
        raise ChainError(f"unknown field(s): {', '.join(sorted(unknown))}")
    missing = {"chain_id", "name", "native_symbol"} - set(entry)
    if missing:
        raise ChainError(f"missing field(s): {', '.join(sorted(missing))}")
    defaults = {name: f.default for name, f in Chain.__dataclass_fields__.items() if name in FIELDS}
    values = {**{k: v for k, v in defaults.items() if k not in missing}, **entry}
    chain_id = _int(values, "chain_id", minimum=1)
    if chain_id >= 2**63:
        raise ChainError(f"chain_id {chain_id} is too large")
    for name in ("name", "native_symbol"):
        if not isinstance(values[name], str) or not values[name].strip():
            raise ChainError(f"{name} must be a non-empty string")
    if len(values["name"]) > 100 or len(values["native_symbol"]) > 16:
        raise ChainError("name is at most 100 characters, native_symbol at most 16")
    decimals = _int(values, "native_decimals", minimum=0)
    if decimals > 36:
        raise ChainError("native_decimals must be at most 36")
    urls = values["rpc_urls"]
    if not isinstance(urls, list | tuple):
        raise ChainError("rpc_urls must be a list of URLs")
    rpc_urls = tuple(rpc_url_check(url) for url in urls)
    if len(set(rpc_urls)) != len(rpc_urls):
        raise ChainError("rpc_urls lists a URL twice")
    factory, explorer = _where(values)
    for name in ("devnet", "testnet", "takes_payments", "traces"):
        if not isinstance(values[name], bool):
            raise ChainError(f"{name} must be true or false")
    thresholds = {}
    for name in ("vault_gas_threshold", "solver_gas_threshold"):
        try:
            thresholds[name] = int(Decimal(str(values[name])))
        except (InvalidOperation, ValueError):
            raise ChainError(f"{name} must be an amount in wei") from None
        if not 0 <= thresholds[name] < 2**256:
            raise ChainError(f"{name} must be an amount in wei")
    return Chain(
        chain_id=chain_id,
        name=values["name"].strip(),
        native_symbol=values["native_symbol"].strip(),
        native_decimals=decimals,
        rpc_urls=rpc_urls,
        confirmations=_int(values, "confirmations", minimum=0),
        front_confirmations=_front_confirmations(values),
        poll_interval_seconds=_number(values, "poll_interval_seconds", positive=True),
        factory_address=to_checksum_address(factory) if factory else "",
        explorer_url=explorer,
        devnet=values["devnet"],
        testnet=values["testnet"],
        max_fee_per_gas_gwei=_number(values, "max_fee_per_gas_gwei", positive=False),
        takes_payments=values["takes_payments"],
        max_lag_blocks=_int(values, "max_lag_blocks", minimum=0),
        traces=values["traces"],
        family=values["family"],
        source=source,
        **thresholds,
    )


def _row_fields(chain: Chain) -> dict[str, Any]:
    return {
        "name": chain.name,
        "native_symbol": chain.native_symbol,
        "native_decimals": chain.native_decimals,
        "rpc_urls": list(chain.rpc_urls),
        "confirmations": chain.confirmations,
        "front_confirmations": chain.front_confirmations,
        "poll_interval_seconds": chain.poll_interval_seconds,
        "explorer_url": chain.explorer_url,
        "factory_address": chain.factory_address,
        "takes_payments": chain.takes_payments,
        "devnet": chain.devnet,
        "testnet": chain.testnet,
        "max_fee_per_gas_gwei": chain.max_fee_per_gas_gwei,
        "max_lag_blocks": chain.max_lag_blocks,
        "traces": chain.traces,
        "family": chain.family,
        "vault_gas_threshold": chain.vault_gas_threshold,
        "solver_gas_threshold": chain.solver_gas_threshold,
    }


def _from_row(row) -> Chain:
    values = {name: getattr(row, name) for name in FIELDS}
    values |= {
        "rpc_urls": tuple(row.rpc_urls or ()),
        "vault_gas_threshold": int(row.vault_gas_threshold),
        "solver_gas_threshold": int(row.solver_gas_threshold),
    }
    return Chain(**values, source=row.source)


def seed_entries(entries: Any) -> list[Chain]:
    """The seed's chains, checked; ImproperlyConfigured names the entry that is wrong."""
    if not isinstance(entries, list):
        raise ImproperlyConfigured("CHAINS must be a JSON list of chain entries.")
    chains_: list[Chain] = []
    for entry in entries:
        try:
            chains_.append(chain_from_entry(entry, source="seed"))
        except ChainError as exc:
            raise ImproperlyConfigured(f"CHAINS entry {entry!r}: {exc}") from None
    if len({c.chain_id for c in chains_}) != len(chains_):
        raise ImproperlyConfigured("CHAINS lists a chain id twice.")
    return chains_


def chains_seed(entries: Any = None, *, replace: bool = False) -> tuple[int, int]:
    """Import the CHAINS seed: (created, updated). Rows the seed created follow it; staff rows are kept.

    With `replace` (the suite's registry overrides), the rows become exactly the seed's.
    """
    from chains.models import Chain as ChainRow

    wanted = seed_entries(settings.CHAINS if entries is None else entries)
    created = updated = 0
    with transaction.atomic():
        rows = {row.chain_id: row for row in ChainRow.objects.select_for_update()}
        if replace:
            ChainRow.objects.exclude(chain_id__in=[c.chain_id for c in wanted]).delete()
        for chain in wanted:
            row = rows.get(chain.chain_id)
            fields = _row_fields(chain)
            if row is None:
                ChainRow.objects.create(chain_id=chain.chain_id, source=ChainRow.Source.SEED, **fields)
                created += 1
            elif (row.source == ChainRow.Source.SEED or replace) and _from_row(row) != chain:
                ChainRow.objects.filter(pk=row.pk).update(
                    source=ChainRow.Source.SEED, updated_at=timezone.now(), **fields
                )
                updated += 1
    if created or updated or replace:
        registry_forget()
    return created, updated


class _State:
    lock = threading.Lock()
    by_id: dict[int, Chain] | None = None
    version: tuple | None = None
    check_at = 0.0


def registry_recheck_seconds() -> float:
    return REGISTRY_RECHECK_SECONDS


@receiver(post_save, sender="chains.Chain", dispatch_uid="chains.registry.saved")
@receiver(post_delete, sender="chains.Chain", dispatch_uid="chains.registry.deleted")
def _chain_row_changed(**_signal) -> None:
    """A chain's row changed (staff, `chains add`): every process reads the registry again."""
    registry_forget()


def registry_forget() -> None:
    """Read the rows again at the next lookup (a row changed in this process)."""
    _State.by_id, _State.version, _State.check_at = None, None, 0.0


def _version() -> tuple:
    from chains.models import Chain as ChainRow

    found = ChainRow.objects.aggregate(count=Count("pk"), latest=Max("updated_at"))
    return found["count"], found["latest"]


def _registry() -> dict[int, Chain]:
    by_id = _State.by_id
    if by_id is not None and time.monotonic() < _State.check_at:
        return by_id
    from chains.models import Chain as ChainRow

    with _State.lock:
        version = _version()
        if version[0] == 0 and settings.CHAINS:
            chains_seed()  # a database the seed never reached (migrated before chains were rows)
            version = _version()
        if _State.by_id is None or version != _State.version:
            _State.by_id = {row.chain_id: _from_row(row) for row in ChainRow.objects.all()}
            _State.version = version
        _State.check_at = time.monotonic() + registry_recheck_seconds()
        return _State.by_id


def chains() -> list[Chain]:
    """Every chain of the registry, by id."""
    return sorted(_registry().values(), key=lambda c: c.chain_id)


def chain_get(chain_id: int) -> Chain | None:
    return _registry().get(chain_id)
