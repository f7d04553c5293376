import hashlib
import hmac
import json

import pytest
from django.utils import timezone

from platform_api.context import RequestContext
from webhooks.services import webhook_endpoint_create


def make_endpoint(organization, url, events=("*",)):
    ctx = RequestContext(
        organization=organization,
        api_key=None,
        ip_address="127.0.0.1",
        method="POST",
        path="/api/v1/webhooks",
    )
    return webhook_endpoint_create(ctx=ctx, url=url, events=list(events))


def verify(request, secret: str) -> dict:
    """What the webhooks guide's receiver does (docs/guides/webhooks-and-cli.md): check the signature over the raw body, then parse it."""
    expected = hmac.new(secret.encode(), request.get_data(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, request.headers["X-Service-Signature"])
    return json.loads(request.get_data())


def make_due(delivery):
    type(delivery).objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())


@pytest.fixture
def receiver(httpserver):
    return httpserver


class SlowServer:
    """A TCP server on 127.0.0.1 that never answers (`hang`) or trickles one header line a second (`trickle`)."""

    def __init__(self, mode: str, interval: float = 1.0):
        import socket
        import threading

        self.mode, self.interval = mode, interval
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _accept(self) -> None:
        import threading

        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            if self.mode == "trickle":
                threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn) -> None:
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while not self.stopped.wait(self.interval):
                conn.sendall(b"X-Slow: 1\r\n")
        except OSError:
            return

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def slow_server():
    servers: list[SlowServer] = []

    def make(mode: str, interval: float = 1.0) -> SlowServer:
        server = SlowServer(mode, interval)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
