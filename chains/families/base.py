"""What a chain family is to the service (`ChainFamily`): everything that differs between an EVM chain and a
chain of another kind, behind one protocol. The money path above it (the collection kernel, the outbox's rows
and keys, the ledger, every order type) speaks of chains, addresses and transactions only through it and the
registry.

- **addresses**: which strings are addresses (`is_address`, `address_pattern` for the schemas) and their one
  canonical form (`normalise`: EIP-55 on EVM), so that stored and compared addresses agree;
- **deposit addresses**: the address of one payment, derived from its kind and id (`deposit_address`: CREATE2
  under the chain's deposit factory on EVM), recomputable at any time;
- **scan**: one pass of the watcher over the chain's new blocks (`scan`), recording deposits to the watched
  addresses and handing them over;
- **build, sign, broadcast**: one outbox transaction taken from its row to the chain (`send`), signed once,
  sent again with the same bytes;
- **receipt**: one look at an in-flight transaction (`check`), finishing it by its receipt; the outbox's
  periodic passes over every in-flight transaction of its chains (`poll`: receipts, rebroadcasts, fee bumps,
  lost sends, repairs) and over the receipts alone (`receipts`), each told the chains of other families to
  leave alone.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from chains.models import OutboxTx
    from chains.outbox.receipts import SenderCounts
    from chains.registry import Chain
    from chains.watcher import ScanResult


@runtime_checkable
class ChainFamily(Protocol):
    name: str  # its chains.models.Chain.Family value
    address_pattern: str  # a regular expression of its addresses, for the OpenAPI schema

    def is_address(self, value: object) -> bool: ...

    def normalise(self, address: str) -> str: ...

    def deposit_address(self, chain: Chain, *, kind: str, identifier: str) -> str: ...

    def scan(self, chain_id: int) -> ScanResult | None: ...

    def send(self, tx: OutboxTx) -> None: ...

    def check(self, tx: OutboxTx, counts: SenderCounts | None = None) -> None: ...

    def poll(self, *, skip_chains: Collection[int]) -> int: ...

    def receipts(self, *, skip_chains: Collection[int]) -> int: ...
