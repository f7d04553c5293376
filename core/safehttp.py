"""One HTTP POST to a URL a customer chose, with SSRF checks and a total deadline.

The host name is resolved first and every address it resolves to is checked
(`core.netguard`) before any TCP connection is opened; the connection then goes
to an address that was checked, while the name is kept for TLS SNI, certificate
verification and `Host`. A name that rebinds between the check and the
connection therefore never reaches a private address, and a refused address is
never connected to, so an error never reveals whether a private port is open.

The deadline covers the whole exchange (name lookup, connect, TLS, sending,
and reading the status line and headers), not each read: a receiver that
trickles a header line every few seconds is cut off at the deadline. Only the
status and headers are read; the receiver's body is never needed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import heapq
import itertools
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from core.netguard import check_address, parse_address

MAX_RESPONSE_HEAD = 16 * 1024
# Name lookups run here so that a slow resolver cannot hold an attempt past its deadline.
_resolver = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="safehttp-dns")


class UnsafeUrl(ValueError):
    """The URL, or an address its host resolves to, may not be called."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str


@dataclass(frozen=True)
class PostResult:
    status: int | None
    elapsed_ms: int
    error: str = ""
    timed_out: bool = False


def parse_target(url: str, *, allow_http_loopback: bool) -> Target:
    """Split and check a URL's form: https (or http to a loopback name in development), no credentials."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl("The URL is not valid.") from exc
    host = (parts.hostname or "").lower().rstrip(".")
    if not host:
        raise UnsafeUrl("The URL needs a host.")
    if parts.username or parts.password:
        raise UnsafeUrl("The URL must not contain credentials.")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise UnsafeUrl("The URL must not contain spaces or control characters.")
    if parts.scheme == "http" and not (allow_http_loopback and _is_loopback_name(host)):
        raise UnsafeUrl("The URL must use https (plain http only to localhost, and only in development).")
    if parts.scheme not in ("http", "https"):
        raise UnsafeUrl("The URL must use https.")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path)


def _is_loopback_name(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return parse_address(host).is_loopback
    except ValueError:
        return False


def resolve_checked(host: str, port: int, *, allow_loopback: bool, timeout: float) -> list[tuple]:
    """The socket addresses of `host`, all of which passed the address check; UnsafeUrl otherwise."""
    future = _resolver.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    try:
        infos = future.result(timeout=max(timeout, 0.001))
    except concurrent.futures.TimeoutError as exc:
        raise TimeoutError(f"looking up '{host}' took too long") from exc
    except (OSError, UnicodeError) as exc:
        raise UnsafeUrl(f"The host '{host}' does not resolve.") from exc
    if not infos:
        raise UnsafeUrl(f"The host '{host}' does not resolve.")
    for _family, _, _, _, sockaddr in infos:
        verdict = check_address(parse_address(str(sockaddr[0])), allow_loopback=allow_loopback)
        if not verdict.allowed:
            raise UnsafeUrl(
                f"The host '{host}' resolves to a non-public address ({verdict.reason}); it is not called."
            )
    return [(family, sockaddr) for family, _, _, _, sockaddr in infos]


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - certifi comes with requests
        return ssl.create_default_context()


def _host_header(target: Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


def _request_bytes(target: Target, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {target.path} HTTP/1.1", f"Host: {_host_header(target)}"]
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError("header names and values must not contain line breaks")
        lines.append(f"{name}: {value}")
    lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def _parse_status(head: bytes) -> int:
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ValueError("not an HTTP response")
    return int(code)


class _Deadlines:
    """One thread per process that fires every watchdog at its deadline (a thread per request cost more than
    the request): a heap of deadlines, woken early only by a deadline sooner than the one it waits for."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Watchdog]] = []
        self._seq = itertools.count()
        self._wake = threading.Condition()
        self._pid = 0

    def add(self, at: float, watchdog: _Watchdog) -> None:
        with self._wake:
            if self._pid != os.getpid():  # first use, or a forked child (threads do not survive fork)
                self._pid, self._heap = os.getpid(), []
                threading.Thread(target=self._run, name="safehttp-deadlines", daemon=True).start()
            heapq.heappush(self._heap, (at, next(self._seq), watchdog))
            if self._heap[0][2] is watchdog:
                self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._wake.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                _, _, watchdog = heapq.heappop(self._heap)
            watchdog.fire()


_deadlines = _Deadlines()


class _Watchdog:
    """Shuts the socket down at the deadline, whatever call is blocked on it (TLS handshake included)."""

    def __init__(self, remaining: float) -> None:
        self.fired = False
        self._cancelled = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        _deadlines.add(time.monotonic() + max(remaining, 0.0), self)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.fired:
                _shutdown(sock)

    def fire(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self.fired = True
            if self._sock is not None:
                _shutdown(self._sock)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            self._sock = None


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _connect(
    addresses, watchdog: _Watchdog, remaining, connect_timeout_seconds: float
) -> tuple[socket.socket | None, OSError | None]:
    """The first of the checked addresses that accepts a connection in time, or None and the last error."""
    last_error: OSError | None = None
    for family, sockaddr in addresses:
        if remaining() <= 0:
            break
        candidate = socket.socket(family, socket.SOCK_STREAM)
        watchdog.watch(candidate)
        candidate.settimeout(min(connect_timeout_seconds, max(remaining(), 0.001)))
        try:
            candidate.connect(sockaddr)
        except OSError as exc:
            candidate.close()
            last_error = exc
            continue
        return candidate, None
    return None, last_error


def _read_head(sock: socket.socket, remaining) -> bytes | None:
    """The response's status line and headers (what arrived of them before the peer closed or time ran out);
    None when they grow past MAX_RESPONSE_HEAD."""
    head = b""
    while b"\r\n\r\n" not in head:
        if len(head) > MAX_RESPONSE_HEAD:
            return None
        sock.settimeout(max(remaining(), 0.001))
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return head


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    deadline_seconds: float,
    connect_timeout_seconds: float = 5.0,
    allow_loopback: bool = False,
) -> PostResult:
    """POST `body` to `url`; never raises for network trouble, never takes longer than the deadline."""
    started = time.monotonic()
    deadline = started + deadline_seconds

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    def remaining() -> float:
        return deadline - time.monotonic()

    timed_out = PostResult(
        None, 0, f"timed out: no complete answer within {deadline_seconds:g} s", timed_out=True
    )
    try:
        target = parse_target(url, allow_http_loopback=allow_loopback)
        addresses = resolve_checked(
            target.host, target.port, allow_loopback=allow_loopback, timeout=remaining()
        )
    except UnsafeUrl as exc:
        return PostResult(None, elapsed(), str(exc)[:500])
    except TimeoutError:
        return PostResult(None, elapsed(), timed_out.error, timed_out=True)

    watchdog = _Watchdog(remaining())
    sock: socket.socket | None = None
    try:
        sock, last_error = _connect(addresses, watchdog, remaining, connect_timeout_seconds)
        if sock is None:
            if watchdog.fired or remaining() <= 0:
                return PostResult(None, elapsed(), timed_out.error, timed_out=True)
            reason = "timed out" if isinstance(last_error, TimeoutError) else "refused or unreachable"
            return PostResult(None, elapsed(), f"connection failed ({reason})")
        sock.settimeout(max(remaining(), 0.001))
        if target.scheme == "https":
            sock = _tls_context().wrap_socket(sock, server_hostname=target.host)
            watchdog.watch(sock)
        sock.sendall(_request_bytes(target, body, headers))
        head = _read_head(sock, remaining)
        if head is None:
            return PostResult(None, elapsed(), "the response headers are too large")
        if watchdog.fired or (b"\r\n\r\n" not in head and remaining() <= 0):
            return PostResult(None, elapsed(), timed_out.error, timed_out=True)
        if not head:
            return PostResult(None, elapsed(), "the connection closed without a response")
        try:
            return PostResult(_parse_status(head), elapsed())
        except ValueError:
            return PostResult(None, elapsed(), "the response is not HTTP")
    except ssl.SSLError as exc:
        if watchdog.fired:
            return PostResult(None, elapsed(), timed_out.error, timed_out=True)
        return PostResult(None, elapsed(), f"TLS failed: {exc.reason or exc.__class__.__name__}"[:500])
    except TimeoutError:
        return PostResult(None, elapsed(), timed_out.error, timed_out=True)
    except OSError as exc:
        if watchdog.fired:
            return PostResult(None, elapsed(), timed_out.error, timed_out=True)
        return PostResult(None, elapsed(), f"connection failed ({exc.__class__.__name__})")
    finally:
        watchdog.cancel()
        if sock is not None:
            sock.close()
