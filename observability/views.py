"""`/metrics`: the Prometheus exposition, to the addresses METRICS_ALLOWED_NETWORKS names, 404 to any other
(as if there were nothing here)."""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from core.http import client_ip
from observability.collector import ServiceCollector
from observability.multiprocess import NodeCollector, multiprocess_root


@lru_cache(maxsize=8)
def _networks(allowed: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in allowed)


def may_scrape(request: HttpRequest) -> bool:
    address = ipaddress.ip_address(client_ip(request))
    return any(address in network for network in _networks(tuple(settings.METRICS_ALLOWED_NETWORKS)))


class _Exposition:
    """What one scrape shows: the processes' counts, then what is read from the database now."""

    def __init__(self, *collectors) -> None:
        self.collectors = collectors

    def collect(self):
        for collector in self.collectors:
            yield from collector.collect()


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not may_scrape(request):
        raise Http404("Not found.")
    root = multiprocess_root()
    counted = NodeCollector(root) if root is not None else REGISTRY  # every process's, or this one's
    response = HttpResponse(
        generate_latest(_Exposition(counted, ServiceCollector())), content_type=CONTENT_TYPE_LATEST
    )
    response["Cache-Control"] = "no-store"
    return response
