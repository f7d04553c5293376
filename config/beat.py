"""Beat on every node, sending on one.

Every node runs `celery beat` with this scheduler (CELERY_BEAT_SCHEDULER). Before each tick a beat holds, or
tries to take, one lock; only the holder sends the schedule's tasks, and the others wait as standbys. The lock
lives in the shared Redis (SET NX with a time to live, renewed by its holder's every tick, so a holder that is
killed is replaced within 4/3 of BEAT_LOCK_TTL_SECONDS: a standby asks every third of it); without Redis (one
node, the embedded defaults) it is an `flock` on a file under VAR_DIR, released by the kernel when its holder
dies.

A beat that loses the lock between its check and a send (a pause longer than the time to live) may send one
round twice: every periodic task is idempotent (each looks at the rows it works on), so that costs a little
work, never a payment. A beat started with another scheduler would send beside the holder: it refuses to start
(config/celery.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import socket
from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler
from django.conf import settings
from redis.exceptions import RedisError

from core.shared_redis import shared_redis

logger = logging.getLogger(__name__)
LOCK_KEY = "beat:lock"

# Take the lock when it is free, renew it when it is ours; 1 when we hold it afterwards.
_HOLD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class BeatLock:
    """One holder across the deployment's beats: `hold()` takes or renews it, `release()` lets it go."""

    def __init__(self, ttl_seconds: float, lock_file: Path) -> None:
        self.ttl_ms = max(1000, int(ttl_seconds * 1000))
        self.token = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(8)}"
        self.lock_file = lock_file
        self._file: Any = None
        self.held: bool | None = None  # not asked yet: the first answer is logged either way

    def hold(self) -> bool:
        client = shared_redis()
        held = self._hold_redis(client) if client is not None else self._hold_file()
        if held != self.held:
            logger.info("beat %s: %s", self.token, "holds the lock: sending" if held else "standing by")
        self.held = held
        return held

    def _hold_redis(self, client) -> bool:
        try:
            return bool(client.eval(_HOLD, 1, LOCK_KEY, self.token, self.ttl_ms))
        except RedisError as exc:  # no Redis, no broker either: nothing could be sent
            logger.warning("beat lock unavailable (%s): not sending", exc)
            return False

    def _hold_file(self) -> bool:
        if self._file is not None:
            return True
        self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        handle = self.lock_file.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._file = handle
        return True

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # the flock goes with the file
            self._file = None
        client = shared_redis()
        if client is not None:
            with contextlib.suppress(RedisError):
                client.eval(_RELEASE, 1, LOCK_KEY, self.token)
        self.held = False


class LockedScheduler(PersistentScheduler):
    """celery's persistent scheduler (the schedule's last runs in a file per node), sending only while it
    holds the deployment's beat lock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.lock = BeatLock(settings.BEAT_LOCK_TTL_SECONDS, Path(settings.VAR_DIR) / "beat.lock")
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        renew_every = self.lock.ttl_ms / 3000  # renewed well before it lapses
        if not self.lock.hold():
            return renew_every
        return min(super().tick(*args, **kwargs), renew_every)

    def close(self) -> None:
        self.lock.release()  # a standby takes over at its next tick, not after the time to live
        super().close()
