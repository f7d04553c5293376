"""What `/metrics` reads when Prometheus scrapes: the state of the money path, from the database (and the
broker's queue lengths), as gauges.

Every query is an aggregate on an index (orders not ended, transactions in flight or failed, open
incidents) or reads a row per chain, so a scrape costs the same with a million orders as with ten. A
database that does not answer within METRICS_DATABASE_TIMEOUT_MS (or at all) leaves these out and sets
`checkout_metrics_database_up` to 0: the scrape still answers, with what the processes counted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)


class ServiceCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        started = time.monotonic()
        up = gauge("checkout_metrics_database_up", "1 when this scrape could read the database.", [])
        try:
            families = list(_from_database())
        except DatabaseError as exc:
            logger.warning("metrics: the database did not answer the scrape: %s", exc.__class__.__name__)
            families = []
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
        yield up
        yield from families
        yield from _queues()
        took = gauge("checkout_metrics_scrape_duration_seconds", "How long this scrape's reads took.", [])
        took.add_metric([], time.monotonic() - started)
        yield took


# What each app reports from the database, registered in its AppConfig.ready (`metric_source`): the apps
# above read their own rows, so this module imports none of them. Each source gets the scrape's clock and
# yields its families.
MetricSource = Callable[[datetime], Iterable[Metric]]
_sources: list[MetricSource] = []


def metric_source(source: MetricSource) -> MetricSource:
    """Register `source` to be read at every scrape, in the scrape's one read-only database transaction."""
    if source not in _sources:
        _sources.append(source)
    return source


def metric_sources() -> list[MetricSource]:
    return list(_sources)


def gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def _from_database() -> Iterator[Metric]:
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as sql:
                sql.execute(
                    "SET LOCAL statement_timeout = %s", [str(int(settings.METRICS_DATABASE_TIMEOUT_MS))]
                )
        now = timezone.now()
        for source in _sources:
            yield from source(now)


def _queues() -> Iterator[Metric]:
    """Messages waiting in each of the service's Celery queues (Redis or the file broker)."""
    queues = sorted(
        {settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_WEBHOOK_QUEUE, settings.CELERY_CHAIN_QUEUE}
    )
    family = gauge("checkout_celery_queue_length", "Messages waiting in a Celery queue.", ["queue"])
    broker = settings.CELERY_BROKER_URL
    try:
        if broker.startswith(("redis://", "rediss://")):
            import redis

            client = redis.Redis.from_url(broker, socket_timeout=1, socket_connect_timeout=1)
            separator = "\x06\x16"  # kombu's priority queues: "<queue>", then "<queue>\x06\x16<priority>"
            for queue in queues:
                keys = [queue] + [f"{queue}{separator}{priority}" for priority in range(1, 10)]
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.llen(key)
                family.add_metric([queue], sum(pipe.execute()))
        elif broker == "filesystem://":
            folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))
            for queue in queues:
                family.add_metric([queue], sum(1 for _ in folder.glob(f"*.{queue}.msg")))
    except Exception as exc:  # a broker that does not answer: no queue lengths in this scrape
        logger.warning("metrics: the broker did not answer the scrape: %s", exc.__class__.__name__)
        return
    yield family
