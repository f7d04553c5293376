"""The refunds' Celery tasks: settle one, resume those in flight, cancel the unfunded past their time."""

from __future__ import annotations

from celery import shared_task

from refunds.services import TOP_UP_PREFIX, refunds_expire
from refunds.settlement import refund_settle, refunds_settling
from refunds.top_ups import top_up_settle, top_ups_settling


@shared_task(acks_late=True)
def settle_refund(refund_id: str) -> dict[str, str]:
    """A refund's (re_) or a refund balance top-up's (rtu_) money; running it twice pays nothing twice."""
    return top_up_settle(refund_id) if refund_id.startswith(TOP_UP_PREFIX) else refund_settle(refund_id)


@shared_task
def resume_refunds() -> int:
    """Settle again every refund whose money may still move: what a lost task left waiting."""
    waiting = [*refunds_settling(), *top_ups_settling()]
    for refund_id in waiting:
        settle_refund.delay(refund_id)
    return len(waiting)


@shared_task
def expire_refunds() -> int:
    return refunds_expire()
