"""How many long polls (`GET /api/v1/webhook-events/listen`) may wait at once. Each waiting listener holds a
web thread for up to its `wait`; unbounded, one read key's two dozen listens held every thread, and the payers'
pages and other organizations' calls waited or timed out.

Three bounds, each refused with 429 and Retry-After, before anything waits:

- in this web process: WEBHOOK_LISTEN_PER_PROCESS (a quarter of its threads by default), a semaphore, so at
  least three quarters of the threads always serve everything else;
- per API key and per organization, across the deployment's processes: WEBHOOK_LISTEN_PER_KEY and
  WEBHOOK_LISTEN_PER_ORGANIZATION, counted in the shared cache (Redis's INCR is atomic; the file cache of a
  single machine's development setup is counted under a lock of the process). A count outlives a process
  killed while it waited by at most the longest wait and a margin (its expiry), never longer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from django.conf import settings
from django.core.cache import caches

from platform_api.errors import PlatformError

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_counting = threading.Lock()
_semaphore: tuple[int, threading.BoundedSemaphore] | None = None
MARGIN_SECONDS = 30


def _process_slots() -> threading.BoundedSemaphore:
    global _semaphore
    with _lock:
        size = settings.WEBHOOK_LISTEN_PER_PROCESS
        if _semaphore is None or _semaphore[0] != size:  # a setting changed (tests)
            _semaphore = (size, threading.BoundedSemaphore(size))
        return _semaphore[1]


def _refused(what: str, limit: int) -> PlatformError:
    return PlatformError(
        status=429,
        type="rate_limit_error",
        code="rate_limit_exceeded",
        message=f"At most {limit} listeners may wait at once {what}: one is answered first. Retry after 5 "
        "seconds.",
        headers={"Retry-After": "5"},
    )


@contextmanager
def _counted(key: str, limit: int, what: str) -> Iterator[None]:
    cache = caches["shared"]
    expiry = settings.WEBHOOK_LISTEN_MAX_WAIT_SECONDS + MARGIN_SECONDS
    try:
        with _counting:  # the file cache's incr is a read and a write: one thread of this process at a time
            cache.add(key, 0, timeout=expiry)
            taken = cache.incr(key)
    except Exception as exc:  # the shared cache away: the process's own bound still holds
        logger.warning("listen: the shared cache did not count %s (%s)", key, exc.__class__.__name__)
        yield
        return
    try:
        if taken > limit:
            raise _refused(what, limit)
        yield
    finally:
        try:
            with _counting:
                cache.decr(key)
        except Exception as exc:  # expired meanwhile, or the cache away: the expiry ends the count
            logger.debug("listen: %s not counted down (%s)", key, exc.__class__.__name__)


@contextmanager
def listen_slot(*, api_key_id: str, organization_id: int) -> Iterator[None]:
    """A place to wait in, or 429 (PlatformError) when a bound is reached; given back on leaving."""
    with ExitStack() as stack:
        stack.enter_context(
            _counted(f"listen:key:{api_key_id}", settings.WEBHOOK_LISTEN_PER_KEY, "per API key")
        )
        stack.enter_context(
            _counted(
                f"listen:org:{organization_id}", settings.WEBHOOK_LISTEN_PER_ORGANIZATION, "per organization"
            )
        )
        slots = _process_slots()
        if not slots.acquire(blocking=False):
            raise _refused("on this server", settings.WEBHOOK_LISTEN_PER_PROCESS)
        try:
            yield
        finally:
            slots.release()
