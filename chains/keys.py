"""The keys at the chain boundary, written and read in one place: a watched address's owner (`<kind>:<id>`) and
an outbox transaction's business key (`<kind>:<id>:<step>[:<detail>…]`).

    order:<uuid>:sweep                  the order's sweep of its deposit address
    order:<uuid>:sweep:<deposit>        a sweep of one deposit (another token)
    order:<uuid>:relay:<n>              its n-th payment to the relay provider (or the solver's delivery)
    quickpay:<qp_id>:refund:<deposit>   what of a deposit goes back to its sender
    refund:<re_id>:delivery             a merchant's refund reaching its payer
    x402:<uuid>:settle                  a payer's authorization submitted

A few keys belong to a kind, not to one of its records: the word after the kind names the step, and what
follows is its detail (`chains:deploy-factory:<chain>[:attempt-<n>]`, `relay:allowance:<chain>:<token>:
<spender>:<attempt>`, `inventory:router:<chain>`, `inventory:router-allowance:<chain>:<token>:<attempt>`,
`nonce:<chain>:<sender>:<nonce>`).

Writers build keys with `outbox_key`, `kind_key` and `owner_of`; readers take them apart with `tx_key` and
`owner_id`, never with `split`: a stored key is read exactly as it was written, the keys written render exactly
the strings stored before the keys were typed (their uniqueness is the outbox's idempotency), and a step the
enum does not name is `None`, not a silent `else`. The outbox row keeps the parsed owner, step and funds in
columns of its own (`chains.models.OutboxTx`), set from here when the row is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class OwnerKind(StrEnum):
    """Who a watched address or an outbox transaction belongs to: the part of its owner or key before the
    first colon."""

    ORDER = "order"  # orders of the order interface and of payment links: `order:<uuid>`
    QUICKPAY = "quickpay"  # quick payments: `quickpay:<qp_id>:payout`, ...
    CHAINS = "chains"  # the chains app's own transactions: `chains:deploy-factory:<id>`
    RELAY = "relay"  # what the vault does for the relay provider, not for one order: `relay:allowance:...`
    INVENTORY = (
        "inventory"  # the solver's inventory of a token on a chain: `inventory:<id>:refill:<n>:<step>`
    )
    REFUND = "refund"  # a merchant's refund to a payer: `refund:<re_id>`, `refund:<re_id>:delivery`, ...
    X402 = "x402"  # the x402 facilitator's settlements of payers' authorizations: `x402:<id>:settle`
    NONCE = "nonce"  # the outbox's own fillers of a nonce left empty: `nonce:<chain>:<sender>:<nonce>`


# Owners written under another name before the kinds were one enum. A quick payment's deposit address is
# watched as `quick_payment:<qp_id>`, which is also its CREATE2 salt's kind (quickpay.services.QUICK_PAYMENT_OWNER):
# the address is derived from it, so it is never renamed; it is read as the kind it is.
_STORED_AS = {"quick_payment": OwnerKind.QUICKPAY}


class Step(StrEnum):
    """What an outbox transaction does for its owner: the part of its key after the owner's id."""

    SWEEP = "sweep"  # a deposit address's balance into the vault
    SWEEP_RETURN = "sweep-return"  # a top-up's deposit of another token swept, to go back to its sender
    RELAY = "relay"  # the vault pays the relay provider, or the solver delivers from its inventory
    EXECUTE = "execute"  # the contract call an order makes on its destination chain
    REFUND = "refund"  # back to a payer: what did not count, or a failed payment
    RETURN = "return"  # an expired quick payment's counted deposits, back to their senders
    UNFUNDED = "unfunded"  # a refund's funding that came too late, back to its sender
    PAYOUT = "payout"  # a quick payment's amount to its recipient
    DELIVERY = "delivery"  # a merchant's refund to its payer
    ORDER = "order"  # the vault pays the order that delivers a refund to another chain or token
    WITHDRAWAL = "withdrawal"  # an admin's withdrawal of the refund balance
    SETTLE = "settle"  # a payer's x402 authorization submitted
    REFILL = "refill"  # the solver's inventory topped up through the relay provider
    DEPLOY = "deploy"  # a contract of the service's deployed (the deposit factory, the call router)
    ALLOWANCE = "allowance"  # a signer's standing allowance for a spender
    NONCE = "nonce"  # an empty transaction filling a nonce


class Funds(StrEnum):
    """Whose money an outbox transaction moves to or from an address the service does not hold."""

    PAYER = "payer"  # refunds and returns to payers; a payer's x402 authorization
    RECIPIENT = "recipient"  # deliveries, payouts, relays and calls
    OPERATOR = "operator"  # a deployer's own transactions


class Signer(StrEnum):
    """The signing roles (chains.signers): whose key signs an outbox transaction."""

    VAULT = "vault"  # holds what deposit addresses sweep; pays the relay provider, refunds, payouts
    SOLVER = "solver"  # the inventory: delivers and calls on destination chains
    DEPLOYER = "deployer"  # deploys the service's contracts (the vault, unless it has a key of its own)


# The keys of a kind's own transactions: the word written after the kind, for each step.
_KIND_WORDS: dict[tuple[str, Step], str] = {
    (OwnerKind.CHAINS, Step.DEPLOY): "deploy-factory",
    (OwnerKind.RELAY, Step.ALLOWANCE): "allowance",
    (OwnerKind.INVENTORY, Step.DEPLOY): "router",
    (OwnerKind.INVENTORY, Step.ALLOWANCE): "router-allowance",
}
_WORD_STEPS = {(kind, word): step for (kind, step), word in _KIND_WORDS.items()}


def owner_kind(owner_or_key: str) -> str:
    """`"order"` of `"order:…"`: the kind of an address's owner or of an outbox transaction's key."""
    prefix = owner_or_key.partition(":")[0]
    return _STORED_AS.get(prefix, prefix)


@dataclass(frozen=True)
class TxKey:
    """A business key taken apart: `order:<uuid>:relay:0` is kind `order`, id `<uuid>`, what `relay:0`."""

    kind: str
    id: str
    what: str = ""  # everything after the id: the step and what follows it

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}" + (f":{self.what}" if self.what else "")

    @property
    def _kind_step(self) -> Step | None:
        if self.kind == OwnerKind.NONCE:
            return Step.NONCE
        return _WORD_STEPS.get((self.kind, self.id))

    @property
    def step(self) -> Step | None:
        """The step the service wrote (`relay` of `relay:0`), or None for one it does not name."""
        if (own := self._kind_step) is not None:
            return own
        first = self.what.partition(":")[0]
        return Step(first) if first in Step._value2member_map_ else None

    @property
    def detail(self) -> str:
        """What follows the step (`0` of `relay:0`, the deposit's id of `sweep:<deposit>`), or ""."""
        if self._kind_step is not None:
            return self.what
        return self.what.partition(":")[2]

    @property
    def owner(self) -> str:
        """Whose transaction it is, as the ledger's postings name it: `order:<uuid>` of `order:<uuid>:sweep`,
        `chains:deploy-factory` of a factory's deployment, `nonce:<chain>` of a nonce filler."""
        return f"{self.kind}:{self.id}" if self.what else str(self)

    def is_(self, step: Step, *, detail: bool | None = None) -> bool:
        """Whether the key's step is `step`; with `detail`, and whether something follows it (or nothing)."""
        return self.step is step and (detail is None or bool(self.detail) is detail)

    def funds(self, signer: str) -> Funds:
        """Whose money the transaction moves, besides the service's own addresses: refunds and returns go to
        payers, the rest (deliveries, payouts, relays, calls) to recipients; an x402 settlement moves a payer's
        tokens; a deployer's own transactions are the operator's."""
        if signer not in (Signer.VAULT, Signer.SOLVER):
            return Funds.OPERATOR
        if self.kind == OwnerKind.X402:  # a payer's authorization, settled: the tokens come from the payer
            return Funds.PAYER
        to_payer = self.kind == OwnerKind.REFUND or self.step in (Step.REFUND, Step.RETURN)
        return Funds.PAYER if to_payer else Funds.RECIPIENT


def tx_key(key: str) -> TxKey:
    """`key` taken apart; the kind as `owner_kind` reads it."""
    prefix, _, rest = key.partition(":")
    identifier, _, what = rest.partition(":")
    return TxKey(kind=owner_kind(prefix), id=identifier, what=what)


def key_columns(key: str, signer: str) -> dict[str, str]:
    """The outbox row's columns of `key` sent by `signer`: its owner, step and whose funds it moves."""
    parsed = tx_key(key)
    return {"owner": parsed.owner, "step": parsed.step or "", "funds": parsed.funds(signer)}


def _parts(detail: tuple[object, ...]) -> str:
    return "".join(f":{part}" for part in detail)


def outbox_key(kind: OwnerKind, identifier: object, step: Step, *detail: object) -> str:
    """The business key of one of a record's transactions: `order:<uuid>:sweep:<deposit>` is
    `outbox_key(OwnerKind.ORDER, order.pk, Step.SWEEP, deposit.pk)`."""
    if (kind, step) in _KIND_WORDS or kind == OwnerKind.NONCE:
        raise ValueError(f"{kind}:…:{step} is a kind's own transaction: kind_key writes it")
    return f"{kind}:{identifier}:{step}{_parts(detail)}"


def kind_key(kind: OwnerKind, step: Step, *detail: object) -> str:
    """The business key of a kind's own transaction, which no record owns: `chains:deploy-factory:<chain>` is
    `kind_key(OwnerKind.CHAINS, Step.DEPLOY, chain_id)`, `nonce:<chain>:<sender>:<nonce>`
    `kind_key(OwnerKind.NONCE, Step.NONCE, chain_id, sender, nonce)`."""
    if kind == OwnerKind.NONCE and step is Step.NONCE:
        return f"{kind}{_parts(detail)}"
    return f"{kind}:{_KIND_WORDS[(kind, step)]}{_parts(detail)}"


def extended(key: str, *detail: object) -> str:
    """`key` with more detail after it: a later attempt (`…:attempt2`), a payment's n-th transaction (`…:0`)."""
    return f"{key}{_parts(detail)}"


def extensions_of(key: str) -> str:
    """The prefix every key `extended` from `key` starts with, for a query of them."""
    return f"{key}:"


def owner_of(kind: OwnerKind, identifier: object) -> str:
    """A watched address's owner, and the owner the ledger's postings name: `order:<uuid>`."""
    return f"{kind}:{identifier}"


def owner_id(owner: str) -> str:
    """The id of a watched address's owner (`<uuid>` of `order:<uuid>`, `re_…` of `refund:re_…`)."""
    return owner.partition(":")[2]
