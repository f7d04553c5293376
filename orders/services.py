"""What other apps may ask the orders app to do: its public writes.

The orders app's public surface is this module, `selectors` (reads), `models`, `inputs` (typed requests),
`events` (an order's lifecycle, to subscribe to), `states` (the declared state machine), `fees` (the fee
schedule), `envelope` (the order interface's envelope and error shape, for apps that answer on that
interface) and `onramps` (the onramp adapter registry). The rest (the lifecycle's primitives, settlement,
relays, sweeps, refunds, quotes, views, serializers) is the app's own: import-linter's "public surface"
contract refuses another app's import of it.
"""

from __future__ import annotations

from orders.creation import order_create
from orders.lifecycle import WAITING, order_expire, order_record_card_payment, orders_expire_unpaid
from orders.quotes import quote_build
from orders.settlement import enqueue_settlement

__all__ = [
    "WAITING",
    "enqueue_settlement",
    "order_create",
    "order_expire",
    "order_record_card_payment",
    "orders_expire_unpaid",
    "quote_build",
]
