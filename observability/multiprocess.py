"""prometheus-client's multiprocess mode across the node's roles.

Each process writes its samples under `METRICS_DIR/<role>/` (config/settings/observability.py); a role
clears its own directory when it starts (gunicorn's master, a Celery worker's main process, beat), before
any of its processes writes, so a restarted role does not add its previous life's counts to the new one;
Prometheus reads the drop as a counter reset. `/metrics` merges every role's files into one exposition:
the web's requests, the workers' settlements and deliveries, summed over their processes.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector


def multiprocess_root() -> Path | None:
    return (
        Path(settings.METRICS_DIR)
        if settings.METRICS_DIR and os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        else None
    )


def clear_own_directory() -> None:
    """A role starting: its previous processes' files go (none of its processes has written yet)."""
    own = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if own and settings.METRICS_DIR:
        shutil.rmtree(own, ignore_errors=True)
        Path(own).mkdir(parents=True, exist_ok=True)


def process_exited(pid: int) -> None:
    """A process of this role exited: its live gauges go; its counters stay, as counted."""
    own = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if own:
        mark_process_dead(pid, own)


class NodeCollector(Collector):
    def __init__(self, root: Path) -> None:
        self.root = root

    def collect(self) -> Iterator[Metric]:
        files = glob.glob(os.path.join(self.root, "*", "*.db"))
        return iter(MultiProcessCollector.merge(files, accumulate=True))
