"""Real EVM nodes for the tests: anvil from the pinned npm package (tools/), one per test module, with what
`make run` deploys on its devnets. tests/conftest.py registers these fixtures for the whole suite."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ANVIL = ROOT / "tools" / "node_modules" / ".bin" / "anvil"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def anvil_path() -> str | None:
    if ANVIL.exists():
        return str(ANVIL)
    return shutil.which("anvil")


@contextlib.contextmanager
def running_anvil(chain_id: int = 31337):
    """A fresh anvil node (instant blocks) for the duration of the block; yields its RPC URL."""
    binary = anvil_path()
    if binary is None:
        pytest.skip("anvil is not installed: `make install` installs it with npm (tools/package.json)")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--chain-id", str(chain_id), "--silent"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def anvil():
    """A fresh anvil node (chain 31337, instant blocks); yields its RPC URL."""
    with running_anvil() as url:
        yield url


@pytest.fixture(scope="module")
def devnet(anvil):
    """A fresh anvil node with everything `make run` deploys on a devnet: (chain, deployment)."""
    from django.conf import settings

    from chains.devnet import deploy
    from chains.registry import Chain

    chain = Chain(
        chain_id=31337,
        name="Devnet A",
        native_symbol="ETH",
        rpc_urls=(anvil,),
        confirmations=1,
        poll_interval_seconds=1,
        factory_address=settings.DEVNET_FACTORY_ADDRESS,
        devnet=True,
    )
    return chain, deploy(chain)


@pytest.fixture
def devnet_registry(devnet, settings, tmp_path):
    """The registry and the token registry as `make run` leaves them, for the test's devnet."""
    import dataclasses
    import json

    from chains.devnet import token_list
    from chains.tokens import token_list_load

    chain, deployment = devnet
    settings.CHAINS = [dataclasses.asdict(chain)]
    path = tmp_path / "devnet-tokens.json"
    path.write_text(json.dumps(token_list([deployment])))
    token_list_load(path)
    return chain, deployment


def _shape(deployment, symbol):
    from chains.devnet import NATIVE, TOKENS

    if symbol == "ETH":
        return {
            "chainId": 31337,
            "address": NATIVE,
            "symbol": "ETH",
            "name": "Ether (devnet)",
            "decimals": 18,
            "metadata": {},
        }
    _, name, decimals, _ = next(t for t in TOKENS if t[0] == symbol)
    return {
        "chainId": 31337,
        "address": deployment["contracts"][symbol],
        "symbol": symbol,
        "name": name,
        "decimals": decimals,
        "metadata": {},
    }


def devnet_order(api_client, deployment, symbol="dUSDC", amount="10000000"):
    """An order on the test's devnet (31337) paying in `symbol`, created through the API."""
    from orders.models import Order
    from tests.orders.conftest import order_body

    src, dst = _shape(deployment, symbol), _shape(deployment, "dWETH")
    body = order_body(
        srcChain=31337,
        dstChain=31337,
        srcTokenAddress=src["address"],
        srcAmount=amount,
        dstTokenAddress=dst["address"],
        metadata={"srcToken": src, "dstToken": dst},
    )
    response = api_client.post("/orders", body, format="json")
    assert response.status_code == 200, response.content
    return Order.objects.get(pk=response.json()["data"]["id"])


def devnet_chain(chain_id: int, rpc_url: str):
    from django.conf import settings

    from chains.registry import Chain

    name = "Devnet A" if chain_id == 31337 else "Devnet B"
    return Chain(
        chain_id=chain_id,
        name=name,
        native_symbol="ETH",
        rpc_urls=(rpc_url,),
        confirmations=1,
        poll_interval_seconds=1,
        factory_address=settings.DEVNET_FACTORY_ADDRESS,
        devnet=True,
    )


@pytest.fixture(scope="module")
def two_devnets():
    """Devnet A (31337) and Devnet B (31338) as `make run` starts them: [(chain, deployment), ...]."""
    from chains.devnet import deploy

    with running_anvil(31337) as url_a, running_anvil(31338) as url_b:
        chains = [devnet_chain(31337, url_a), devnet_chain(31338, url_b)]
        yield [(chain, deploy(chain)) for chain in chains]


@pytest.fixture
def devnets_registry(two_devnets, settings, tmp_path, monkeypatch):
    """Both devnets in the registry and the token registry, and this process holding the devnet signing
    keys, as the worker of `make run` does."""
    import dataclasses
    import json

    from chains.devnet import devnet_signer_environment, token_list
    from chains.tokens import token_list_load

    settings.CHAINS = [dataclasses.asdict(chain) for chain, _ in two_devnets]
    path = tmp_path / "devnet-tokens.json"
    path.write_text(json.dumps(token_list([deployment for _, deployment in two_devnets])))
    token_list_load(path)
    for variable, key in devnet_signer_environment().items():
        monkeypatch.setenv(variable, key)
    return two_devnets


@pytest.fixture
def worker_env(devnets_registry, settings):
    """What a worker needs to settle on the test's devnets: the registry and the signing keys."""
    import json

    from chains.devnet import devnet_signer_environment

    return {"CHAINS": json.dumps(settings.CHAINS), **devnet_signer_environment()}


def poll_until(queue, predicate, timeout=60.0):
    """Act as beat: ask the worker to poll the outbox until `predicate()` holds."""
    from chains.tasks import outbox_poll
    from tests.conftest import wait_for

    def done():
        outbox_poll.apply_async(queue=queue)
        return predicate()

    return wait_for(done, timeout=timeout, interval=1.0)
