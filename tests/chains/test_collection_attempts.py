"""The collection kernel's attempts of a transfer back (chains.collection.attempt), for every kind of payment:
a failed one is asked for again under the next attempt's key, later and a bounded number of times; one under
way or mined is never asked for again."""

from datetime import timedelta

import pytest
from django.utils import timezone

from chains.collection import all_mined, attempt
from chains.models import OutboxTx
from tests.factories import OutboxTxFactory

pytestmark = pytest.mark.django_db
FAILED, MINED = OutboxTx.Status.FAILED, OutboxTx.Status.MINED
KEY = "quickpay:qp_1:return:9"


@pytest.fixture(autouse=True)
def limits(settings):
    settings.REFUND_RETRY_SECONDS = 60
    settings.REFUND_MAX_ATTEMPTS = 3


class Asked:
    def __init__(self):
        self.keys = []

    def __call__(self, key):
        self.keys.append(key)
        return OutboxTxFactory(key=key)


def failed(key, seconds_ago):
    return OutboxTxFactory(
        key=key, status=FAILED, finished_at=timezone.now() - timedelta(seconds=seconds_ago)
    )


def test_the_first_attempt_is_asked_for_under_the_key_itself():
    ask = Asked()
    tx = attempt(KEY, ask)
    assert ask.keys == [KEY] and tx.key == KEY


@pytest.mark.parametrize(
    "status", [OutboxTx.Status.QUEUED, OutboxTx.Status.SIGNED, OutboxTx.Status.BROADCAST, MINED]
)
def test_an_attempt_under_way_or_mined_is_never_asked_for_again(status):
    OutboxTxFactory(key=KEY, status=status)
    ask = Asked()
    assert attempt(KEY, ask).status == status and ask.keys == []


def test_a_failed_attempt_is_tried_again_under_the_next_key_once_the_wait_is_over():
    failed(KEY, seconds_ago=10)
    ask = Asked()
    assert attempt(KEY, ask).status == FAILED and ask.keys == []  # too soon

    OutboxTx.objects.filter(key=KEY).update(finished_at=timezone.now() - timedelta(seconds=61))
    tx = attempt(KEY, ask)
    assert ask.keys == [f"{KEY}:attempt2"] and tx.key == f"{KEY}:attempt2"


def test_after_the_last_attempt_failed_the_failure_stands_for_staff():
    failed(KEY, seconds_ago=300)
    failed(f"{KEY}:attempt2", seconds_ago=200)
    last = failed(f"{KEY}:attempt3", seconds_ago=100)
    ask = Asked()
    assert attempt(KEY, ask) == last and ask.keys == []


def test_a_transfer_back_is_done_once_any_of_its_attempts_is_mined():
    other = "quickpay:qp_1:return:10"
    failed(KEY, seconds_ago=300)
    OutboxTxFactory(key=f"{KEY}:attempt2", status=MINED)
    assert all_mined([KEY]) and all_mined([])
    assert not all_mined([KEY, other])  # nothing asked for the other deposit yet
    OutboxTxFactory(key=other, status=OutboxTx.Status.BROADCAST)
    assert not all_mined([KEY, other])
    OutboxTx.objects.filter(key=other).update(status=MINED)
    assert all_mined([KEY, other])
