"""`manage.py chains deploy-factory` with a real signing worker on a real anvil devnet: the factory goes out
through the outbox once, lands at its CREATE2 address, and is recorded on the chain's row."""

import dataclasses
import threading

import pytest
from django.core.management import call_command
from web3 import Web3

from chains.factory import factory_address, factory_code_state, factory_owner
from chains.models import Chain as ChainRow
from chains.models import OutboxTx
from chains.registry import chain_get
from tests.devnets import poll_until

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_deploy_factory_deploys_once_and_records_it(
    devnets_registry, worker_env, start_worker, settings, capsys, monkeypatch
):
    from chains import registry

    monkeypatch.setattr(registry, "REGISTRY_RECHECK_SECONDS", 0.0)  # the worker records it: another process
    (a, _), (b, _) = devnets_registry
    settings.CHAINS = [dataclasses.asdict(a) | {"factory_address": ""}, dataclasses.asdict(b)]
    assert chain_get(a.chain_id).accepts_payments is False
    w3 = Web3(Web3.HTTPProvider(a.rpc_url))
    nonce = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    # A first attempt failed (a fresh chain refused its estimate, as the rehearsal once saw): the command asks
    # again under the next attempt's key instead of answering that failure for ever.
    from tests.factories import OutboxTxFactory

    first = OutboxTxFactory(
        key=f"chains:deploy-factory:{a.chain_id}",
        chain_id=a.chain_id,
        signer="deployer",
        sender=settings.VAULT_ADDRESS,
        status=OutboxTx.Status.FAILED,
        error="would revert: reverted without a reason",
    )
    worker = start_worker(**worker_env, OUTBOX_RESEND_AFTER_SECONDS="0")
    failed: list[BaseException] = []

    def deploy():
        try:
            call_command("chains", "deploy-factory", str(a.chain_id), "--timeout", "90")
        except BaseException as exc:  # reported by the test's thread
            failed.append(exc)
        finally:
            from django.db import connection

            connection.close()  # this thread's own connection: the test database is dropped at the end

    command = threading.Thread(target=deploy)
    command.start()
    key = f"chains:deploy-factory:{a.chain_id}:attempt-2"
    poll_until(worker.queue, lambda: OutboxTx.objects.filter(key=key, status="mined").exists(), timeout=90)
    command.join(timeout=90)
    assert not failed, failed

    address = factory_address()
    assert address != settings.DEVNET_FACTORY_ADDRESS  # a CREATE2 address, not the devnet deployer's nonce 0
    assert factory_code_state(w3, address) == "ours" and factory_owner(w3, address) == settings.VAULT_ADDRESS
    row = ChainRow.objects.get(pk=a.chain_id)
    assert (row.factory_address, row.source) == (address, "staff")
    assert chain_get(a.chain_id).accepts_payments is True
    assert "the deposit factory is at" in capsys.readouterr().out

    call_command("chains", "deploy-factory", str(a.chain_id))  # again: nothing is sent
    assert "already recorded; nothing sent" in capsys.readouterr().out
    deployments = OutboxTx.objects.filter(key__startswith=f"chains:deploy-factory:{a.chain_id}")
    assert sorted(deployments.values_list("key", "status")) == [(first.key, "failed"), (key, "mined")]
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == nonce + 1
