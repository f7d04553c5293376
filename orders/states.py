"""The order's state machine, declared: each status, the statuses it may move to, the event it announces when
an order enters it, the settlement step that runs while an order is in it, and what it means.

`lifecycle.order_transition` refuses any move this table does not list (a programming error: it raises
`ForbiddenTransition`); `settlement.STEPS` is built from the `step` column; the admin's order page and
`docs/architecture.md` (`manage.py order_states`) render it; a test walks it (every status reachable from a
first one, no move outside it).

An event in `announces` is announced by the lifecycle function that makes the move (it carries what that
move knows: the error of a failure, the refund's hash); `orders.events.Changed` is announced on every move.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.machines import ForbiddenTransition, Machine
from orders.models import InventoryRefill, Order, RefundTx, RelayTx

Status = Order.Status

__all__ = [
    "FINAL",
    "INITIAL",
    "MACHINE",
    "ORDER",
    "REFILL",
    "REFUND_TX",
    "RELAY_TX",
    "ForbiddenTransition",
    "State",
]


@dataclass(frozen=True)
class State:
    to: frozenset[str]
    announces: str  # the orders.events class announced on entering this status; "" for none
    step: str  # the orders.settlement function run while an order is here; "" for none
    meaning: str


MACHINE: dict[str, State] = {
    Status.SCANNING_DEPOSIT: State(
        to=frozenset({Status.QUOTING_AFTER_DEPOSIT, Status.EXPIRED, Status.FAILURE}),
        announces="",
        step="",
        meaning="waiting for the payer's deposit at its address; partial deposits add up to srcAmount",
    ),
    Status.WAITING_STRIPE_PAYMENT: State(
        to=frozenset({Status.QUOTING_AFTER_DEPOSIT, Status.EXPIRED, Status.FAILURE}),
        announces="",
        step="",
        meaning="waiting for the card payment (vendorB); the vault fronts the USDC once it is made",
    ),
    Status.QUOTING_AFTER_DEPOSIT: State(
        to=frozenset({Status.SENDING_TOKEN_FROM_VAULT, Status.FAILURE}),
        announces="Paid",
        step="_quote",
        meaning="paid: what arrived is priced again; below the payer's expectation less the slippage, it fails",
    ),
    Status.SENDING_TOKEN_FROM_VAULT: State(
        to=frozenset({Status.RELAY, Status.FAILURE}),
        announces="",
        step="_send_to_vault",
        meaning="the deposit address is swept into the vault (a solver that fronts delivers beside the sweep; "
        "the relay provider is paid once the sweep is in a block)",
    ),
    Status.RELAY: State(
        to=frozenset({Status.EXECUTING, Status.EXECUTED, Status.FAILURE}),
        announces="",
        step="_relay",
        meaning="the relay provider (or the devnet solver) delivers on the destination chain",
    ),
    Status.EXECUTING: State(
        to=frozenset({Status.EXECUTED, Status.FAILURE}),
        announces="",
        step="_execute",
        meaning="contract types: the call is made on the destination chain (the solver's execute step), or "
        "the relay provider's fill that made it is confirmed there",
    ),
    Status.EXECUTED: State(
        to=frozenset(),
        announces="Executed",
        step="",
        meaning="delivered: points, filledAt; a surplus or late deposit is still refunded beside it",
    ),
    Status.FAILURE: State(
        to=frozenset({Status.REFUNDING}),
        announces="Failed",
        step="",
        meaning="cannot complete; with a deposit it moves on to refunding at once",
    ),
    Status.EXPIRED: State(
        to=frozenset({Status.REFUNDING}),
        announces="Expired",
        step="_expired",
        meaning="not paid in time (or its session expired); holding a deposit, it is refunded",
    ),
    Status.REFUNDING: State(
        to=frozenset({Status.REFUNDED}),
        announces="",
        step="_refunding",
        meaning="every deposit goes back to its sender from the vault (or to the card)",
    ),
    Status.REFUNDED: State(
        to=frozenset(),
        announces="Refunded",
        step="",
        meaning="every deposit is back with its sender",
    ),
}

# Where an order starts: a crypto deposit, or a card payment.
INITIAL = (Status.SCANNING_DEPOSIT, Status.WAITING_STRIPE_PAYMENT)
# Where an order waits for its payer, and where nothing more happens to its status.
WAITING = [status for status in INITIAL]
FINAL = frozenset(status for status, state in MACHINE.items() if not state.to)


# The table as the one shape every status machine has (core.machines), for `manage.py states`.
ORDER = Machine(
    "orders.Order.status",
    moves={status: state.to for status, state in MACHINE.items()},
    initial=INITIAL,
    announces={
        status: f"orders.events.{state.announces}" for status, state in MACHINE.items() if state.announces
    },
    meanings={status: state.meaning for status, state in MACHINE.items()},
)


def check_move(from_status: str, to_status: str) -> None:
    """ForbiddenTransition unless the table lists `from_status -> to_status`."""
    if from_status == to_status or not ORDER.allows(from_status, to_status):
        raise ForbiddenTransition(f"an order does not move from {from_status} to {to_status} (orders.states)")


# What the relay provider said of one of its transactions, and one refund of an order: each a record written
# once, as it was, and never moved.
RELAY_TX = Machine(
    "orders.RelayTx.status",
    moves={status: set() for status in RelayTx.Status},
    initial=tuple(RelayTx.Status),
    meanings={status: f"the provider's transaction, {status.label.lower()}" for status in RelayTx.Status},
)
REFUND_TX = Machine(
    "orders.RefundTx.status",
    moves={status: set() for status in RefundTx.Status},
    initial=tuple(RefundTx.Status),
    meanings={
        RefundTx.Status.SUCCESS: "the deposit is back with its sender",
        RefundTx.Status.FAILURE: "it failed",
    },
)

F = InventoryRefill.Status
REFILL = Machine(
    "orders.InventoryRefill.status",
    moves={
        F.DEPOSITING: {F.PENDING, F.FILLED, F.FAILED},
        F.PENDING: {F.FILLED, F.FAILED},
        F.FILLED: set(),
        F.FAILED: set(),
    },
    initial=(F.DEPOSITING,),
    meanings={
        F.DEPOSITING: "the quote is taken; its transactions go through the outbox",
        F.PENDING: "paid; the provider's fill is awaited",
        F.FILLED: "the solver's stock is refilled",
        F.FAILED: "refused, or the provider failed or refunded",
    },
)


def table_markdown() -> str:
    """The table as docs/architecture.md shows it."""
    lines = [
        "| status | may move to | announces | settlement step | meaning |",
        "|---|---|---|---|---|",
    ]
    for status, state in MACHINE.items():
        to = ", ".join(f"`{s}`" for s in sorted(state.to)) or "(final)"
        lines.append(
            f"| `{status}` | {to} | {state.announces or '-'} | {state.step or '-'} | {state.meaning} |"
        )
    return "\n".join(lines)
