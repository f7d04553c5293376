"""Every status column's declared state machine (core.machines), in one list: `manage.py states` prints it,
docs/architecture.md includes the printout, and tests keep the list, the models and the page equal."""

from __future__ import annotations

from chains.states import DEPOSIT, OUTBOX
from checkout.states import SESSION, TRANSACTION
from core.machines import Machine
from facilitator.states import SETTLEMENT
from orders.states import ORDER, REFILL, REFUND_TX, RELAY_TX
from quickpay.states import QUICK_PAYMENT
from refunds.states import REFUND, WITHDRAWAL
from webhooks.states import DELIVERY, NOTIFICATION_EMAIL

MACHINES: tuple[Machine, ...] = (
    ORDER,
    RELAY_TX,
    REFUND_TX,
    REFILL,
    SESSION,
    TRANSACTION,
    QUICK_PAYMENT,
    REFUND,
    WITHDRAWAL,
    SETTLEMENT,
    DEPOSIT,
    OUTBOX,
    DELIVERY,
    NOTIFICATION_EMAIL,
)


def states_markdown() -> str:
    """Every machine, as docs/architecture.md shows it."""
    return "\n\n".join(machine.markdown() for machine in MACHINES) + "\n"
