from celery import shared_task

from quickpay import services, settlement


@shared_task
def expire_quick_payments() -> int:
    return services.quick_payments_expire()


@shared_task
def settle_quick_payment(payment_id: str) -> dict[str, str]:
    """The quick payment's payout and refunds (quickpay/settlement.py); running it twice pays nothing twice."""
    return settlement.quick_payment_settle(payment_id)


@shared_task
def resume_quick_payments() -> int:
    """Every quick payment whose settlement is in flight, driven once (a worker just started)."""
    payments = settlement.quick_payments_settling()
    for payment_id in payments:
        settlement.quick_payment_settle(payment_id)
    return len(payments)


# The names these tasks had while their code lived in platform_api: a message a previous release queued
# under one still runs, once, as the task it names. Nothing sends them any more.
@shared_task(name="platform_api.tasks.expire_quick_payments")
def expire_quick_payments_queued_before() -> int:
    return expire_quick_payments()


@shared_task(name="platform_api.tasks.settle_quick_payment")
def settle_quick_payment_queued_before(payment_id: str) -> dict[str, str]:
    return settle_quick_payment(payment_id)
