"""What follows one attempt of a delivery, decided from its outcome alone: the retry policy, with nothing to
read or write, so it is tested on its own (tests/webhooks/test_retry_policy.py) and `webhooks.delivery`
only records what it decides.

A delivery that succeeded is done. One that failed is retried after the next of WEBHOOK_RETRY_DELAYS, until
they run out; a manual resend and a test ping are tried once. A short delay (a minute or less) is also queued
with a countdown; the sweep of due deliveries remains the guarantee.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from webhooks.models import WebhookDelivery

Status = WebhookDelivery.Status
COUNTDOWN_AT_MOST_SECONDS = 60


@dataclass(frozen=True)
class Next:
    status: str  # success, failed, or pending (another attempt is due)
    attempt_at: datetime | None  # when the next attempt is due
    countdown: int | None  # queue it with this countdown as well (a short delay), or None

    @property
    def done(self) -> bool:
        return self.status != Status.PENDING


def after_attempt(*, succeeded: bool, number: int, once: bool, delays: Sequence[int], now: datetime) -> Next:
    """What follows attempt `number` (from 1) of a delivery: `once` for a manual resend or a test ping."""
    if succeeded:
        return Next(Status.SUCCESS, None, None)
    if once or number > len(delays):
        return Next(Status.FAILED, None, None)
    delay = delays[number - 1]
    return Next(
        Status.PENDING, now + timedelta(seconds=delay), delay if delay <= COUNTDOWN_AT_MOST_SECONDS else None
    )
