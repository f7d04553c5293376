from celery import shared_task

from platform_api import idempotency, ratelimit


@shared_task
def purge_expired_platform_rows() -> dict[str, int]:
    return {
        "idempotency_records": idempotency.purge_expired(),
        "rate_limit_windows": ratelimit.purge_expired_windows(),
    }
