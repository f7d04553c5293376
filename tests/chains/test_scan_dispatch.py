"""Beat's dispatcher sends each chain's scan when its poll interval has passed, counting the time the last scan
itself took: a 1 s chain dispatched every second is scanned every second, not every other."""

from datetime import timedelta

import pytest
from django.utils import timezone

from chains.models import ChainCursor
from chains.tasks import scan_chain_deposits, scan_due_chains

pytestmark = pytest.mark.django_db

CHAIN = {"chain_id": 8453, "name": "Base", "native_symbol": "ETH", "rpc_urls": ["https://rpc.example"]}


@pytest.fixture
def sent(monkeypatch):
    chains: list[int] = []
    monkeypatch.setattr(scan_chain_deposits, "apply_async", lambda args, **kwargs: chains.append(args[0]))
    return chains


@pytest.mark.parametrize(
    ("poll", "ago", "due"),
    [
        (1, 0.6, True),  # the last scan ended 0.4 s after the dispatch before
        (1, 0.3, False),
        (5, 4.4, False),
        (5, 4.6, True),
    ],
)
def test_a_chain_is_due_half_a_dispatch_early(settings, sent, poll, ago, due):
    settings.WATCHER_DISPATCH_SECONDS = 1
    settings.CHAINS = [CHAIN | {"poll_interval_seconds": poll}]
    ChainCursor.objects.create(chain_id=8453, last_scan_at=timezone.now() - timedelta(seconds=ago))

    assert scan_due_chains() == ([8453] if due else [])
    assert sent == ([8453] if due else [])


def test_a_chain_never_scanned_is_due(settings, sent):
    settings.CHAINS = [CHAIN | {"poll_interval_seconds": 30}]
    assert scan_due_chains() == [8453]
