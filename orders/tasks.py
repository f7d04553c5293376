from celery import shared_task

from orders import services


@shared_task
def expire_checkout_sessions() -> int:
    return services.checkout_sessions_expire_due()


@shared_task
def expire_unpaid_orders() -> int:
    return services.orders_expire_unpaid()
