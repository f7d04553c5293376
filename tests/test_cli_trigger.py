"""`checkout-cli trigger` in test mode, as a developer runs it against `make run`: real objects made through the
public API, paid by the devnet wallet on a real anvil devnet, settled by a real Celery worker; the event reaches
`checkout-cli listen`'s local receiver, verified with the `standardwebhooks` library, saying `livemode: false`.
A live key is refused before anything is made."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.db import connection
from web3 import Web3

from chains.artifacts import artifact
from checkout.models import CheckoutSession
from platform_api.testmode import organization_sandbox
from tests.factories import make_api_key
from tests.test_cli import Cli, Receiver, until

TEST_RECIPIENT = (
    "0x000000000000000000000000000000000000dEaD"  # where trigger pays without a default recipient
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


class Beat:
    """What beat and the watcher do in `make run`: scan the devnet and poll the outbox, every half second."""

    def __init__(self, queue: str) -> None:
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(queue,), daemon=True)
        self.thread.start()

    def _run(self, queue: str) -> None:
        from chains.tasks import outbox_poll
        from chains.watcher import scan_chain

        try:
            while not self.stopping.wait(0.5):
                scan_chain(31337)
                outbox_poll.apply_async(queue=queue)
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)


@pytest.mark.parametrize(
    "event",
    ["payment.completed", "payment.failed", "checkout.expired", "refund.updated", "refund.succeeded"],
)
def test_trigger_delivers_a_verified_test_mode_event_to_the_listener(
    organization, devnets_registry, worker_env, start_worker, live_server, tmp_path, event
):
    chain, deployment = devnets_registry[0]
    dusdc = Web3(Web3.HTTPProvider(chain.rpc_url)).eth.contract(
        address=deployment["contracts"]["dUSDC"], abi=artifact("TestToken")["abi"]
    )
    holders = {"payer": Web3(Web3.HTTPProvider(chain.rpc_url)).eth.accounts[1], "recipient": TEST_RECIPIENT}
    holders |= {"vault": settings.VAULT_ADDRESS, "solver": settings.SOLVER_ADDRESS}
    before = {name: dusdc.functions.balanceOf(address).call() for name, address in holders.items()}
    key = make_api_key(organization_sandbox(organization), permissions=["write"])[1]
    assert key.startswith("svc_test_")
    listener, trigger = (
        Cli(tmp_path / "listen", live_server.url, key),
        Cli(tmp_path / "t", live_server.url, key),
    )
    receiver = Receiver(listener.secret())
    listener.start("--forward-to", receiver.url, "--events", event)
    beat = Beat(start_worker(**worker_env).queue)
    try:
        done = trigger.run("trigger", event, "--timeout", "50")
    finally:
        beat.stop()
        until(lambda: receiver.received, f"the listener to forward {event}", timeout=15)
        listener.stop()

    assert done.returncode == 0, done.stdout + done.stderr
    event_id = done.stdout.strip().splitlines()[-1].split()[1]
    assert receiver.ids() == [event_id] and receiver.refused == 0
    body = receiver.received[0][1]
    assert (body["event"], body["livemode"]) == (event, False)
    assert CheckoutSession.objects.get().organization.sandbox_of == organization
    if (
        event == "payment.completed"
    ):  # every unit: the payer's 1 dUSDC is the recipient's and the fee the vault's
        delivered = int(body["data"]["amount"])
        assert 0 < delivered < 1_000_000
        expected = {"payer": -1_000_000, "recipient": delivered, "vault": 1_000_000, "solver": -delivered}

        def moved() -> dict[str, int]:
            return {name: dusdc.functions.balanceOf(a).call() - before[name] for name, a in holders.items()}

        until(lambda: moved() == expected, "the sweep beside the delivery to be mined", timeout=15)
        assert moved() == expected


def test_trigger_refuses_a_live_key_before_making_anything(organization, live_server, tmp_path):
    cli = Cli(tmp_path, live_server.url, make_api_key(organization, permissions=["write"])[1])
    done = cli.run("trigger", "payment.completed")
    assert done.returncode == 1 and "test mode only" in done.stderr
    assert not CheckoutSession.objects.exists()
