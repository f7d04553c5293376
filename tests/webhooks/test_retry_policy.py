"""The retry policy alone (webhooks.retry): what follows an attempt, from its outcome."""

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from webhooks.retry import after_attempt

NOW = datetime(2026, 12, 2, tzinfo=UTC)
DELAYS = [30, 300, 3600]


def test_a_success_is_done_and_a_failure_waits_for_the_next_delay():
    assert after_attempt(succeeded=True, number=1, once=False, delays=DELAYS, now=NOW).status == "success"
    first = after_attempt(succeeded=False, number=1, once=False, delays=DELAYS, now=NOW)
    assert (first.status, first.attempt_at, first.countdown) == ("pending", NOW + timedelta(seconds=30), 30)
    second = after_attempt(succeeded=False, number=2, once=False, delays=DELAYS, now=NOW)
    assert (second.attempt_at, second.countdown) == (NOW + timedelta(seconds=300), None)  # the sweep's


def test_the_last_attempt_and_a_resend_or_a_ping_fail_for_good():
    assert after_attempt(succeeded=False, number=4, once=False, delays=DELAYS, now=NOW).status == "failed"
    assert after_attempt(succeeded=False, number=1, once=True, delays=DELAYS, now=NOW).status == "failed"


@given(
    succeeded=st.booleans(),
    number=st.integers(min_value=1, max_value=12),
    once=st.booleans(),
    delays=st.lists(st.integers(min_value=1, max_value=86_400), max_size=10),
)
def test_an_attempt_is_followed_by_exactly_one_due_attempt_or_none(succeeded, number, once, delays):
    following = after_attempt(succeeded=succeeded, number=number, once=once, delays=delays, now=NOW)
    assert following.done == (following.attempt_at is None)
    if following.attempt_at is not None:
        assert not succeeded and not once and number <= len(delays)
        assert following.attempt_at - NOW == timedelta(seconds=delays[number - 1])
        assert (following.countdown is not None) == (delays[number - 1] <= 60)
