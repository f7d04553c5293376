"""The keys at the chain boundary, read in one place: a watched address's owner (`<kind>:<id>`) and an outbox
transaction's business key (`<kind>:<id>:<step>[:<more>…]`).

    order:<uuid>:sweep                  the order's sweep of its deposit address
    order:<uuid>:sweep:<deposit>        a sweep of one deposit (another token)
    order:<uuid>:relay:<n>              its n-th payment to the relay provider (or the solver's delivery)
    quickpay:<qp_id>:refund:<deposit>   what of a deposit goes back to its sender
    refund:<re_id>:delivery             a merchant's refund reaching its payer
    x402:<uuid>:settle                  a payer's authorization submitted

The kind is `chains.handlers.OwnerKind` (a name stored under an older spelling is read as its kind); the step is
`Step` where it is one the service writes. Handlers take a key apart with `tx_key` and an owner with
`owner_id`, never with `split`: a stored key is read exactly as it was written, and a step the enum does not
name is `None`, not a silent `else`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from chains.handlers import owner_kind


class Step(StrEnum):
    """What an outbox transaction does for its owner: the part of its key after the owner's id."""

    SWEEP = "sweep"  # a deposit address's balance into the vault
    RELAY = "relay"  # the vault pays the relay provider, or the solver delivers from its inventory
    EXECUTE = "execute"  # the contract call an order makes on its destination chain
    REFUND = "refund"  # back to a payer: what did not count, or a failed payment
    RETURN = "return"  # an expired quick payment's counted deposits, back to their senders
    PAYOUT = "payout"  # a quick payment's amount to its recipient
    DELIVERY = "delivery"  # a merchant's refund to its payer
    ORDER = "order"  # the vault pays the order that delivers a refund to another chain or token
    WITHDRAWAL = "withdrawal"  # an admin's withdrawal of the refund balance
    SETTLE = "settle"  # a payer's x402 authorization submitted
    REFILL = "refill"  # the solver's inventory topped up through the relay provider


@dataclass(frozen=True)
class TxKey:
    """A business key taken apart: `order:<uuid>:relay:0` is kind `order`, id `<uuid>`, what `relay:0`."""

    kind: str
    id: str
    what: str = ""  # everything after the id: the step and what follows it

    @property
    def step(self) -> Step | None:
        """The step the service wrote (`relay` of `relay:0`), or None for one it does not name."""
        first = self.what.partition(":")[0]
        return Step(first) if first in Step._value2member_map_ else None

    @property
    def detail(self) -> str:
        """What follows the step (`0` of `relay:0`, the deposit's id of `sweep:<deposit>`), or ""."""
        return self.what.partition(":")[2]

    def is_(self, step: Step, *, detail: bool | None = None) -> bool:
        """Whether the key's step is `step`; with `detail`, and whether something follows it (or nothing)."""
        return self.step is step and (detail is None or bool(self.detail) is detail)


def tx_key(key: str) -> TxKey:
    """`key` taken apart; the kind as `chains.handlers.owner_kind` reads it."""
    prefix, _, rest = key.partition(":")
    identifier, _, what = rest.partition(":")
    return TxKey(kind=owner_kind(prefix), id=identifier, what=what)


def owner_id(owner: str) -> str:
    """The id of a watched address's owner (`<uuid>` of `order:<uuid>`, `re_…` of `refund:re_…`)."""
    return owner.partition(":")[2]
