"""Real EVM nodes for the chain tests: anvil from the pinned npm package (tools/), one per test module."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANVIL = ROOT / "tools" / "node_modules" / ".bin" / "anvil"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def anvil_path() -> str | None:
    if ANVIL.exists():
        return str(ANVIL)
    return shutil.which("anvil")


@pytest.fixture(scope="module")
def anvil():
    """A fresh anvil node (chain 31337, instant blocks); yields its RPC URL."""
    binary = anvil_path()
    if binary is None:
        pytest.skip("anvil is not installed: `make install` installs it with npm (tools/package.json)")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--chain-id", "31337", "--silent"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("anvil did not start")
    yield url
    process.terminate()
    process.wait(timeout=10)
