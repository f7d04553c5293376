"""What gunicorn itself answers, before Django sees a request, is JSON in both interfaces' envelopes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Its servers run on their own SQLite database and file broker: once per CI run is enough (tests/conftest.py).
pytestmark = pytest.mark.own_stack


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)}
    return int(status_line.split()[1]), headers, body


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    env = {
        **os.environ,
        "SERVICE_ENV": "development",
        "DATABASE_URL": "",
        "WEB_CONCURRENCY": "1",
        "VAR_DIR": str(tmp_path_factory.mktemp("var")),
        "GUNICORN_ACCESS_LOG": "",
    }
    with gunicorn(env, port):
        yield port


@contextmanager
def gunicorn(env: dict[str, str], port: int, *, before=None):
    """gunicorn on 127.0.0.1:`port` with `env`, on its database migrated first (a web node starts only on a
    migrated one: core/cluster.py); `before(env)` runs between the two (keys made with manage.py). Stopped on
    leaving."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300
    )
    if before is not None:
        before(env)
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "-c",
            "config/gunicorn_conf.py",
            "--bind",
            f"127.0.0.1:{port}",
            "config.wsgi:application",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_long_url_reaches_the_service_and_is_answered_in_its_envelope(server):
    status, headers, body = _raw(
        server,
        f"GET /chains/{'9' * 200}/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode(),
    )
    assert (status, headers["content-type"]) == (400, "application/json")
    assert json.loads(body)["success"] is False and json.loads(body)["statusCode"] == 400


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "request_too_large"),
        (
            b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
            431,
            "request_too_large",
        ),
        (b"NOT A REQUEST\r\n\r\n", 400, "invalid_field_value"),
    ],
)
def test_what_gunicorn_refuses_itself_is_json_in_both_envelopes(server, request_bytes, status, code):
    answered, headers, body = _raw(server, request_bytes)
    assert (answered, headers["content-type"]) == (status, "application/json")
    assert int(headers["content-length"]) == len(body)
    data = json.loads(body)
    assert (data["success"], data["statusCode"], data["data"]) == (False, status, None)
    assert data["error"]["code"] == code and data["error"]["message"] == data["message"]
    assert b"<html" not in body


@pytest.mark.parametrize(
    ("path", "envelope"),
    [("/api/v1/payment-links", "platform"), ("/orders/x", "order"), ("/chains", "order")],
)
def test_a_host_outside_allowed_hosts_is_a_400_in_the_paths_envelope(client, path, envelope):
    response = client.get(path, HTTP_HOST="evil.example")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    body = response.json()
    if envelope == "platform":
        assert body["error"]["type"] == "invalid_request_error"
    else:
        assert (body["success"], body["statusCode"]) == (False, 400)
    assert b"evil.example" not in response.content


def test_an_error_outside_every_view_is_json_in_the_api_and_html_on_pages(rf):
    from config.error_handlers import server_error

    platform = server_error(rf.get("/api/v1/payment-links"))
    assert platform.status_code == 500 and json.loads(platform.content)["error"]["code"] == "internal_error"
    order = server_error(rf.get("/orders"))
    assert order.status_code == 500 and json.loads(order.content)["statusCode"] == 500
    page = server_error(rf.get("/pay/abcdefgh"))
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")
