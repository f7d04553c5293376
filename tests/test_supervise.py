"""`make run`'s supervisor: gunicorn, two workers and beat start together and stop together."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ANVIL = ROOT / "tools" / "node_modules" / ".bin" / "anvil"

# Its servers run on their own SQLite database and file broker: once per CI run is enough (tests/conftest.py).
pytestmark = pytest.mark.own_stack


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> set[int]:
    found, frontier = set(), [pid]
    while frontier:
        parent = frontier.pop()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                    found.add(int(entry.name))
                    frontier.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_supervisor_serves_and_stops_every_child(tmp_path, signum):
    port = _free_port()
    devnet_ports = f"{_free_port()},{_free_port()}"
    env = {
        **os.environ,
        "SERVICE_ENV": "development",
        "VAR_DIR": str(tmp_path),
        "DATABASE_URL": "",
        "DEVNET_PORTS": devnet_ports,
    }
    env.pop("DJANGO_DEBUG", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120
    )
    output = tmp_path / "output.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "config.supervise", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=output.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a terminal of its own: Ctrl-C reaches its whole process group
    )
    try:
        body = None
        deadline = time.monotonic() + 120  # devnets, deployment and five processes on a loaded 2-core machine
        while time.monotonic() < deadline and body is None and process.poll() is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/chains/1/tokens", timeout=2
                ) as response:
                    body = json.loads(response.read())
            except OSError:
                time.sleep(0.3)
        assert body is not None and body["success"] is True, output.read_text()[-3000:]
        children = _children(process.pid)
        assert len(children) >= 4  # gunicorn (and its workers), two celery workers, beat
        if ANVIL.exists():  # the devnets came first, with their tokens deployed and loaded
            with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/chains/31337/tokens", timeout=5
            ) as response:
                symbols = {t["symbol"] for t in json.loads(response.read())["data"]}
            assert symbols == {"ETH", "dUSDC", "dWETH"}

        # What to open next is printed once the server and every worker are up, after their start-up lines.
        deadline = time.monotonic() + 60
        while "The service is up at" not in output.read_text() and time.monotonic() < deadline:
            time.sleep(0.3)
        started = output.read_text()
        banner = started[started.index("The service is up at") :]
        assert f"http://127.0.0.1:{port}/dashboard/" in banner and "create_api_key" in banner
        assert "celery@" not in banner and "-------------- " not in started  # no Celery start-up banners
        assert (tmp_path / "run.pid").read_text().strip() == str(process.pid)
        time.sleep(6)  # several beat ticks: scans every second, outbox polls
        if signum == signal.SIGINT:
            os.killpg(
                process.pid, signum
            )  # Ctrl-C: the terminal signals every process of the foreground group
        else:
            process.send_signal(signum)
        assert process.wait(timeout=40) == 0
        assert [pid for pid in children if _alive(pid)] == []
        assert not (tmp_path / "run.pid").exists()
        log = output.read_text()
        # Routine task chatter stays out of the console; a requested stop reads as one.
        assert "Sending due task" not in log and not re.search(
            r"Task [\w.]+\[[0-9a-f-]+\] (received|succeeded)", log
        )
        assert "Traceback" not in log and "ERROR" not in log and "exited with" not in log
        assert "No hostname was supplied" not in log  # kombu's warning at each connection of the file broker
        stopped = [
            line.split()[1]
            for line in log.splitlines()
            if line.startswith("supervise: ")
            and line.endswith(" stopped")
            and line != "supervise: all stopped"
        ]
        names = {"web", "worker", "webhooks-1", "webhooks-2", "beat"} | (
            {"devnet-31337", "devnet-31338"} if ANVIL.exists() else set()
        )
        assert sorted(stopped) == sorted(names)
        assert stopped.index("worker") > stopped.index("web") and stopped.index("worker") > stopped.index(
            "beat"
        )
        if ANVIL.exists():  # the devnets outlive the workers that talk to them
            assert min(stopped.index(n) for n in names if n.startswith("devnet-")) > stopped.index("worker")
    finally:
        if process.poll() is None:
            process.kill()


def test_only_the_signing_worker_is_given_keys_keystores_and_the_remote_signers_token(monkeypatch):
    from config.supervise import process_environments

    secrets_ = {
        "VAULT_PRIVATE_KEY": "0x" + "11" * 32,
        "VAULT_KEYSTORE_FILE": "/run/secrets/vault.json",
        "VAULT_PASSPHRASE_FILE": "/run/secrets/vault.pass",
        "DEPLOYER_KEYSTORE_FILE": "/run/secrets/d.json",
        "SIGNER_REMOTE_TOKEN": "t0ken",
    }
    for name, value in secrets_.items():
        monkeypatch.setenv(name, value)
    environments = process_environments(devnets=False)

    assert all(environments["worker"][name] == value for name, value in secrets_.items())
    assert not set(secrets_) & set(environments["other"])  # the web server, beat, the webhook workers
    assert environments["other"]["PATH"] == environments["worker"]["PATH"]
