"""`listen`: the organization's events, forwarded to a local URL as the service would deliver them.

Where it stands is kept in a state file per service and key (`$CHECKOUT_CLI_HOME/listen-<digest>.json`): the
event it goes on after and the events it forwarded since then. `after` is kept SETTLE_MS behind the newest
event forwarded, and the events after it are named to the service as had (`skip`): an event whose transaction
committed late, older than the newest one forwarded, still comes, and none comes twice.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests
from standardwebhooks.webhooks import Webhook

from checkout_cli.service import Service, ServiceError, Unreachable

SETTLE_MS = 10_000
MAX_SKIP = 150
WAIT_SECONDS = 20
BACKOFF = (1, 2, 4, 8, 15, 30)


def local_secret(home: Path) -> str:
    """The secret `listen` signs with, made once and kept (`listen --print-secret` shows it)."""
    path = home / "listen-secret"
    if path.exists():
        return path.read_text().strip()
    home.mkdir(parents=True, exist_ok=True)
    secret = (
        "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    )  # as the service's: base64 after whsec_
    path.write_text(secret + "\n")
    path.chmod(0o600)
    return secret


@dataclass
class Cursor:
    """Where a listener stands: after `after` (an event id) or, before any event, from `since` (ms)."""

    path: Path
    after: str | None = None
    after_ms: int | None = None
    since: int | None = None
    had: list[tuple[str, int]] = field(default_factory=list)  # (id, created ms) forwarded after `after`

    @classmethod
    def load(cls, path: Path) -> Cursor:
        if not path.exists():
            return cls(path)
        saved = json.loads(path.read_text())
        return cls(
            path,
            saved.get("after"),
            saved.get("after_ms"),
            saved.get("since"),
            [(str(i), int(ms)) for i, ms in saved.get("had", [])],
        )

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(
            json.dumps({"after": self.after, "after_ms": self.after_ms, "since": self.since, "had": self.had})
        )
        temporary.replace(self.path)

    def forwarded(self, event: dict[str, Any]) -> None:
        """`event` was handed over: remember it, and move `after` to the newest event SETTLE_MS older than it."""
        self.had.append((event["id"], int(event["created_at"])))
        newest = max(ms for _, ms in self.had)
        settled = [(i, ms) for i, ms in self.had if ms <= newest - SETTLE_MS]
        if settled or len(self.had) > MAX_SKIP:
            last = max(settled or self.had[:-MAX_SKIP], key=lambda item: item[1])
            self.after, self.after_ms = last
            self.had = [(i, ms) for i, ms in self.had if ms >= last[1] and i != last[0]]
            self.since = None
        self.save()


def state_path(home: Path, base_url: str, api_key: str) -> Path:
    digest = hashlib.sha256(f"{base_url.rstrip('/')}\n{api_key}".encode()).hexdigest()[:16]
    return home / f"listen-{digest}.json"


def body_of(event: dict[str, Any]) -> str:
    """The body the service delivers (`{event, webhook_id, timestamp, livemode, data}`), for the local endpoint."""
    created = datetime.fromtimestamp(int(event["created_at"]) / 1000, tz=UTC)
    timestamp = created.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps(
        {
            "event": event["type"],
            "webhook_id": "cli",
            "timestamp": timestamp,
            "livemode": event.get("livemode", True),
            "data": event["data"],
        },
        separators=(",", ":"),
        sort_keys=True,
    )


def headers_for(event: dict[str, Any], body: str, secret: str) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "Content-Type": "application/json",
        "User-Agent": "checkout-cli/0.1",
        "X-Service-Signature": hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest(),
        "X-Service-Webhook-Id": "cli",
        "X-Service-Delivery-Id": f"cli_{uuid.uuid4().hex}",
        "X-Service-Event": event["type"],
        "X-Service-Timestamp": json.loads(body)["timestamp"],
        "webhook-id": event["id"],
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(event["id"], now, body),
    }


class Stopper:
    """How `listen` stops (SIGTERM, Ctrl-C: `request` is the signal handler): at once while it waits for events,
    but an event being handed over is finished first (its POST answered and the cursor written), so a stop
    neither drops it nor forwards it again on the next start. A local endpoint that is down is not waited for.
    """

    def __init__(self) -> None:
        self.requested = False
        self._handing_over = False

    def request(self, *_: Any) -> None:
        self.requested = True
        if not self._handing_over:
            raise KeyboardInterrupt

    @contextmanager
    def handing_over(self) -> Iterator[None]:
        self._handing_over = True
        try:
            yield
        finally:
            self._handing_over = False

    def pause(self, seconds: float) -> None:
        """Sleep, in short steps; a stop asked meanwhile ends it (and the listener)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.requested:
                raise KeyboardInterrupt
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))


def forward(
    event: dict[str, Any], url: str, secret: str, say: Callable[[str], None], sleep=time.sleep
) -> None:
    """POST the event to the local URL until it answers 2xx, waiting longer after each failure (`sleep`)."""
    body = body_of(event)
    failures = 0
    while True:
        started = time.monotonic()
        try:
            answer = requests.post(
                url, data=body.encode(), headers=headers_for(event, body, secret), timeout=30
            )
            outcome, ok = f"{answer.status_code}", 200 <= answer.status_code < 300
        except requests.RequestException as exc:
            outcome, ok = f"not delivered ({exc.__class__.__name__})", False
        took = (time.monotonic() - started) * 1000
        line = f"{_now()}  {event['type']:<18} {event['id']}  -> {outcome} ({took:.0f} ms)"
        if ok:
            say(line)
            return
        delay = BACKOFF[min(failures, len(BACKOFF) - 1)]
        say(f"{line}; again in {delay} s")
        failures += 1
        sleep(delay)


def listen(
    service: Service,
    *,
    url: str,
    secret: str,
    cursor: Cursor,
    types: list[str] | None,
    say: Callable[[str], None],
    stopper: Stopper | None = None,
) -> int:
    """Forward events until a stop is asked (`stopper`) or the key is refused; the exit status (0 stopped, 1
    refused)."""
    stopper = stopper or Stopper()
    failures = 0
    while not stopper.requested:
        asked = time.monotonic()
        try:
            batch = service.events_after(
                after=cursor.after,
                since=cursor.since,
                skip=[i for i, _ in cursor.had],
                types=types,
                wait=WAIT_SECONDS,
            )
        except ServiceError as exc:
            if exc.status == 429:
                say(f"listen: {exc.message}; asking again in 10 s")
                time.sleep(10)
                continue
            if exc.fatal:
                say(f"listen: the service refused the key: {exc.message} ({exc.code})")
                return 1
            if exc.status == 404 and cursor.after:  # the event it stood after is gone (kept 30 days)
                say(f"listen: {exc.message}; going on from now")
                cursor.after, cursor.after_ms, cursor.had, cursor.since = None, None, [], None
                cursor.save()
                continue
            say(f"listen: {exc}")
            return 1
        except Unreachable as exc:
            delay = BACKOFF[min(failures, len(BACKOFF) - 1)]
            say(f"listen: {exc}; asking again in {delay} s")
            failures += 1
            time.sleep(delay)
            continue
        failures = 0
        if cursor.after is None and cursor.since is None:
            # From when it first asked, on the service's clock: nothing between two asks is missed.
            cursor.since = int(batch["now"]) - int((time.monotonic() - asked) * 1000)
            cursor.save()
        for event in batch["data"]:
            with stopper.handing_over():
                forward(event, url, secret, say, sleep=stopper.pause)
                cursor.forwarded(event)
            if stopper.requested:
                return 0
    return 0


def _now() -> str:
    return datetime.now(UTC).astimezone().strftime("%Y-%m-%d %H:%M:%S")
