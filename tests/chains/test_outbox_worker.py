"""The transaction outbox in real Celery workers on a real anvil devnet, with workers killed before signing,
after signing and after broadcasting: a transaction is never sent twice, nor lost."""

import secrets

import pytest
from django.db import transaction
from web3 import Web3

from chains.models import OutboxTx
from chains.outbox import outbox_submit
from tests.conftest import wait_for
from tests.devnets import poll_until

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("crash_at", ["before_sign", "after_sign", "after_broadcast"])
def test_a_killed_worker_never_pays_twice_nor_loses_the_payment(
    devnets_registry, worker_env, start_worker, settings, crash_at
):
    a, _ = devnets_registry
    w3 = Web3(Web3.HTTPProvider(a[0].rpc_url))
    nonce_before = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    recipient = Web3.to_checksum_address("0x" + secrets.token_hex(20))
    doomed = start_worker(**worker_env, OUTBOX_CRASH_AT=crash_at)

    with transaction.atomic():
        tx = outbox_submit(key=f"test:{crash_at}", chain_id=31337, signer="vault", to=recipient, value=12345)

    wait_for(lambda: doomed.process.poll() is not None, timeout=60)  # it died at `crash_at`
    tx.refresh_from_db()
    expected = {"before_sign": "queued", "after_sign": "signed", "after_broadcast": "signed"}[crash_at]
    assert tx.status == expected
    assert bool(tx.raw_tx) == (crash_at != "before_sign")  # signed bytes are stored before any broadcast
    signed_hash = tx.tx_hash

    survivor = start_worker(**worker_env, OUTBOX_RESEND_AFTER_SECONDS="0")
    poll_until(survivor.queue, lambda: OutboxTx.objects.get(pk=tx.pk).status == "mined")

    tx.refresh_from_db()
    assert w3.eth.get_balance(recipient) == 12345  # paid once
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == nonce_before + 1  # one transaction sent
    assert w3.eth.get_transaction_receipt(tx.tx_hash).status == 1
    # The ledger holds the payment once, posted with the outcome it records: value to the recipient, and gas.
    from ledger.models import Entry, Posting

    posting = Posting.objects.get(key__startswith=f"outbox:test:{crash_at}:")
    legs: dict[tuple[str, str], int] = {}
    for e in posting.entries.select_related("account"):  # all in the native coin
        legs[(e.account.kind, e.side)] = legs.get((e.account.kind, e.side), 0) + e.amount
    assert legs[("recipient", "debit")] == 12345
    assert legs[("vault", "credit")] == 12345 + legs[("gas", "debit")] and legs[("gas", "debit")] > 0
    assert (
        sum(e.amount if e.side == "debit" else -e.amount for e in Entry.objects.filter(posting=posting)) == 0
    )
    if crash_at != "before_sign":
        assert tx.tx_hash == signed_hash and tx.hashes == [
            signed_hash
        ]  # the stored bytes, not a new signature


@pytest.mark.parametrize("crash_at", ["after_sign", "after_broadcast"])
def test_a_worker_killed_in_a_signed_burst_pays_each_once(
    devnets_registry, worker_env, start_worker, settings, crash_at
):
    """Three of the vault's transactions queued together are signed together: killed after storing their
    signed bytes, or after broadcasting them, the worker leaves rows the next one finishes, each at its own
    nonce, each paid once."""
    a, _ = devnets_registry
    w3 = Web3(Web3.HTTPProvider(a[0].rpc_url))
    nonce_before = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    recipients = [Web3.to_checksum_address("0x" + secrets.token_hex(20)) for _ in range(3)]
    doomed = start_worker(**worker_env, OUTBOX_CRASH_AT=crash_at)

    with transaction.atomic():
        txs = [
            outbox_submit(
                key=f"test:burst:{crash_at}:{n}", chain_id=31337, signer="vault", to=to, value=1000 + n
            )
            for n, to in enumerate(recipients)
        ]

    wait_for(lambda: doomed.process.poll() is not None, timeout=60)
    for tx in txs:
        tx.refresh_from_db()
    assert [tx.status for tx in txs] == ["signed"] * 3  # all three stored, signed, in one transaction
    assert sorted(tx.nonce for tx in txs) == [nonce_before, nonce_before + 1, nonce_before + 2]
    signed = [tx.tx_hash for tx in txs]

    survivor = start_worker(**worker_env, OUTBOX_RESEND_AFTER_SECONDS="0")
    poll_until(
        survivor.queue,
        lambda: all(OutboxTx.objects.get(pk=tx.pk).status == "mined" for tx in txs),
    )

    for n, tx in enumerate(txs):
        tx.refresh_from_db()
        assert w3.eth.get_balance(recipients[n]) == 1000 + n  # paid once
        assert tx.hashes == [signed[n]]  # the stored bytes, never a second signature
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == nonce_before + 3
