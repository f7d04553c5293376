from celery import shared_task

from platform_api import idempotency, ratelimit, services


@shared_task
def purge_expired_platform_rows() -> dict[str, int]:
    return {
        "idempotency_records": idempotency.purge_expired(),
        "rate_limit_windows": ratelimit.purge_expired_windows(),
    }


@shared_task
def expire_quick_payments() -> int:
    return services.quick_payments_expire()


@shared_task
def settle_quick_payment(payment_id: str) -> dict[str, str]:
    """The quick payment's payout and refunds (platform_api/settlement.py); running it twice pays nothing twice."""
    from platform_api.settlement import quick_payment_settle

    return quick_payment_settle(payment_id)
