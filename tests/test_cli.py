"""checkout-cli (cli/) against the running service (pytest-django's live server), as a developer runs it:
`listen` forwarding the organization's events to a local receiver that verifies them with the
`standardwebhooks` library, resuming after its own restart and the service's, retrying a local endpoint that is
down, ending on a revoked key; `events` and `logs`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from platform_api.services import api_key_revoke
from tests.factories import make_api_key
from webhooks.events import emit_event

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """A local endpoint that verifies each POST with the standardwebhooks library and the CLI's secret."""

    def __init__(self, secret: str, port: int | None = None) -> None:
        self.secret, self.received, self.refused = secret, [], 0
        self.before_answer = None  # called with each verified event before its 200 goes back
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                try:
                    payload = Webhook(receiver.secret).verify(body, dict(self.headers))
                except Exception:
                    receiver.refused += 1
                    self.send_response(400)
                    self.end_headers()
                    return
                receiver.received.append((self.headers["webhook-id"], payload))
                if receiver.before_answer is not None:
                    receiver.before_answer()
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port or 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ids(self) -> list[str]:
        return [event_id for event_id, _ in self.received]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Cli:
    def __init__(self, home: Path, url: str, key: str) -> None:
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "cli"),
            "CHECKOUT_CLI_HOME": str(home),
            "CHECKOUT_API_URL": url,
            "CHECKOUT_API_KEY": key,
        }
        self.process: subprocess.Popen | None = None
        self.lines: list[str] = []

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "checkout_cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def secret(self) -> str:
        return self.run("listen", "--print-secret").stdout.strip()

    def spawn(self, *args: str) -> None:
        """`checkout-cli *args` running, its output lines collected in `lines`."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "checkout_cli", *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()

    def start(self, *args: str) -> None:
        self.spawn("listen", *args)
        until(lambda: any(line.startswith("Ready") for line in self.lines), "the CLI to be ready")
        time.sleep(1.0)  # its first ask reaches the service: events from now on are its

    def _read(self, process: subprocess.Popen) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


def until(check, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"not within {timeout:.0f} s: {what}")


@pytest.fixture
def key(organization):
    return make_api_key(organization, permissions=["read"])


@pytest.fixture
def clis():
    started: list[Cli] = []
    yield started
    for cli in started:
        cli.stop()


def test_two_listeners_each_forward_every_event_they_asked_for_verified(
    organization, key, live_server, tmp_path, clis
):
    first, second = Cli(tmp_path / "a", live_server.url, key[1]), Cli(tmp_path / "b", live_server.url, key[1])
    clis += [first, second]
    assert first.secret() != second.secret() and first.secret() == first.secret()  # kept across runs
    to_first, to_second = Receiver(first.secret()), Receiver(second.secret())
    first.start("--forward-to", to_first.url, "--events", "payment.*")
    second.start("--forward-to", to_second.url)

    paid = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_1"})
    refund = emit_event(organization=organization, event_type="refund.created", data={"id": "re_1"})

    until(lambda: len(to_second.received) == 2 and len(to_first.received) == 1, "both listeners to forward")
    time.sleep(1)
    assert to_first.ids() == [paid.id] and to_second.ids() == [paid.id, refund.id]
    assert to_second.received[1][1]["data"] == {"id": "re_1"} and to_second.refused == 0
    assert any(f"payment.completed  {paid.id}  -> 200" in line.replace("   ", "  ") for line in first.lines)


def test_a_listener_restarted_goes_on_from_the_last_event_nothing_missed_or_repeated(
    organization, key, live_server, tmp_path, clis
):
    cli = Cli(tmp_path / "home", live_server.url, key[1])
    clis.append(cli)
    receiver = Receiver(cli.secret())
    cli.start("--forward-to", receiver.url)
    one = emit_event(organization=organization, event_type="payment.completed", data={"n": 1})
    until(lambda: len(receiver.received) == 1, "the first event")
    cli.stop()
    two = emit_event(organization=organization, event_type="payment.completed", data={"n": 2})
    three = emit_event(organization=organization, event_type="refund.created", data={"n": 3})

    cli.start("--forward-to", receiver.url)

    until(lambda: len(receiver.received) >= 3, "the events sent while it was stopped")
    time.sleep(1.5)
    assert receiver.ids() == [one.id, two.id, three.id]


def test_a_listener_stopped_while_it_hands_an_event_over_finishes_it_first(
    organization, key, live_server, tmp_path, clis
):
    """SIGTERM while the local endpoint is answering: the event's 200 is awaited and its place written before
    the CLI exits, so the next start neither drops it nor forwards it again."""
    cli = Cli(tmp_path / "home", live_server.url, key[1])
    clis.append(cli)
    receiver = Receiver(cli.secret())
    cli.start("--forward-to", receiver.url)
    receiver.before_answer = lambda: (cli.process.send_signal(signal.SIGTERM), time.sleep(0.5))
    one = emit_event(organization=organization, event_type="payment.completed", data={"n": 1})
    until(lambda: cli.process.poll() is not None, "the CLI to stop")
    receiver.before_answer = None
    two = emit_event(organization=organization, event_type="payment.completed", data={"n": 2})

    cli.start("--forward-to", receiver.url)

    until(lambda: len(receiver.received) >= 2, "the event sent while it was stopped")
    time.sleep(1.5)
    assert receiver.ids() == [one.id, two.id] and cli.process.poll() is None


def test_a_local_endpoint_that_is_down_gets_the_event_again_until_it_answers(
    organization, key, live_server, tmp_path, clis
):
    cli = Cli(tmp_path / "home", live_server.url, key[1])
    clis.append(cli)
    port = free_port()
    cli.start("--forward-to", f"http://127.0.0.1:{port}/webhook")
    event = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_9"})
    until(lambda: sum("not delivered" in line for line in cli.lines) >= 2, "two failed attempts shown")

    receiver = Receiver(cli.secret(), port=port)

    until(lambda: receiver.received, "the event once the endpoint is up", timeout=40)
    assert receiver.ids() == [event.id]
    assert any("again in 2 s" in line for line in cli.lines)  # backing off


def test_a_revoked_key_ends_the_listener_at_once_with_the_reason(
    organization, key, live_server, tmp_path, clis
):
    cli = Cli(tmp_path / "home", live_server.url, key[1])
    clis.append(cli)
    cli.start("--forward-to", Receiver(cli.secret()).url)
    revoked_at = time.monotonic()

    api_key_revoke(api_key=key[0])

    assert cli.process is not None
    assert cli.process.wait(timeout=15) == 1
    assert time.monotonic() - revoked_at < 15  # within its 20 s wait, not at the next ask
    until(lambda: any("revoked" in line for line in cli.lines), "the reason")


class Proxy:
    """A TCP relay to the live server that can go down and come back on the same port: the service restarting."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.port = target, free_port()
        self.listener: socket.socket | None = None
        self.up()

    def up(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def down(self) -> None:
        assert self.listener is not None
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread in accept(), which frees the port
        self.listener.close()
        for conn in self.connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.connections += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)


def test_the_listener_survives_the_service_restarting(organization, key, live_server, tmp_path, clis):
    host, port = live_server.url.removeprefix("http://").split(":")
    proxy = Proxy((host, int(port)))
    cli = Cli(tmp_path / "home", f"http://127.0.0.1:{proxy.port}", key[1])
    clis.append(cli)
    receiver = Receiver(cli.secret())
    cli.start("--forward-to", receiver.url)
    before = emit_event(organization=organization, event_type="payment.completed", data={"n": 1})
    until(lambda: len(receiver.received) == 1, "the event before the restart")

    proxy.down()
    during = emit_event(organization=organization, event_type="payment.completed", data={"n": 2})
    until(lambda: any("did not answer" in line for line in cli.lines), "the CLI to see the service gone")
    proxy.up()

    until(lambda: len(receiver.received) >= 2, "the event sent while the service was down", timeout=40)
    time.sleep(1)
    assert receiver.ids() == [before.id, during.id]


def test_events_list_show_and_resend(organization, live_server, tmp_path):
    from tests.webhooks.conftest import make_endpoint

    admin = make_api_key(organization, permissions=["admin"])
    cli = Cli(tmp_path / "home", live_server.url, admin[1])
    endpoint, _ = make_endpoint(organization, "http://127.0.0.1:9/never")
    event = emit_event(organization=organization, event_type="payment.completed", data={"id": "txn_5"})

    listed = cli.run("events", "list")
    shown = cli.run("events", "show", event.id)
    resent = cli.run("events", "resend", event.id, "--endpoint", endpoint.id)
    missing = cli.run("events", "show", "whe_nothere")

    assert listed.returncode == 0 and event.id in listed.stdout and f"{endpoint.id} pending" in listed.stdout
    assert json.loads(shown.stdout)["data"] == {"id": "txn_5"}
    assert resent.returncode == 0 and "queued to " + endpoint.id in resent.stdout
    assert missing.returncode == 1 and "resource_not_found" in missing.stderr
    assert event.deliveries.count() == 2


def test_logs_tail_prints_the_organizations_api_writes_as_they_happen(organization, live_server, tmp_path):
    import requests

    admin = make_api_key(organization, permissions=["admin"])
    tail = Cli(tmp_path / "home", live_server.url, admin[1])
    tail.spawn("logs", "tail", "--every", "0.5")
    lines = tail.lines
    try:
        time.sleep(2)
        created = requests.post(
            f"{live_server.url}/api/v1/api-keys",
            json={"name": "ci", "permissions": ["read"]},
            headers={"Authorization": f"Bearer {admin[1]}"},
            timeout=10,
        )
        assert created.status_code == 201, created.text
        until(lambda: any("api_key.created" in line for line in lines), "the write in the tail")
    finally:
        tail.stop()
    line = next(line for line in lines if "api_key.created" in line)
    assert "POST /api/v1/api-keys 201" in line and created.json()["id"] in line


def test_trigger_says_why_the_events_amount_is_not_what_was_paid():
    """`trigger` announced 1,000,000 while the event carried 988,000 with nothing saying why (issue 64)."""
    from checkout_cli.triggers import amount_explained

    said = amount_explained({"source_amount": "1000000", "amount": "988000", "fee_amount": "12000"})
    assert said == "  amount 988000: the 1000000 paid, less the service's fee of 12000"
    assert amount_explained({"source_amount": "5", "amount": "5", "fee_amount": "0"}) is None
    assert amount_explained({"id": "re_1", "amount": "5"}) is None  # not a payment's event
