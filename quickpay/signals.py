"""How the apps above learn of a quick payment's progress without quick pay importing them."""

from __future__ import annotations

import enum

from django.dispatch import Signal


class Progress(enum.StrEnum):
    """What just happened to an organization's quick payment."""

    RECEIVED = "received"  # a deposit counted toward it (it may now be paid in full)
    DELIVERED = "delivered"  # the payout to its recipient was mined
    RETURNED = "returned"  # it expired unpaid and everything it counted is back with its senders


# kwargs: payment (the QuickPayment, as it is now), progress (Progress). Sent in the transaction that records
# it, for a payment of an organization only (an anonymous one has no books), so that the checkout keeps the
# organization's transaction for it (`/transactions`, its export, analytics, the dashboard).
quick_payment_progressed = Signal()
