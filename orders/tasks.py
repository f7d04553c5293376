from celery import shared_task

from orders import inventory, lifecycle, settlement


@shared_task
def expire_unpaid_orders() -> int:
    return lifecycle.orders_expire_unpaid()


@shared_task
def settle_order_task(order_id: str, actor: str = "system") -> str | None:
    """Move one order on (orders/settlement.py); running it twice, or at once in two workers, is harmless."""
    return settlement.settle_order(order_id, actor=actor)


@shared_task
def settle_stuck_orders() -> int:
    """Orders that made no progress for SETTLEMENT_STUCK_SECONDS: logged at WARNING and driven again."""
    return settlement.settle_stuck_orders()


@shared_task
def poll_relays() -> int:
    """Orders waiting for the relay provider's fill, driven again (their status is asked of the provider)."""
    return settlement.relays_poll()


@shared_task
def resume_settlements() -> int:
    """Every order whose settlement is in flight, driven once (a worker just started)."""
    return settlement.settle_in_flight()


@shared_task
def refill_inventories() -> int:
    """The solver's inventories below their low mark are refilled through the relay provider (one refill at a
    time per inventory, each moved on as far as it can go)."""
    return inventory.inventories_refill()
