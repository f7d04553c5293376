"""A database restored from a backup has forgotten transactions its signers sent after the backup; the chain has
not. On a real anvil devnet: each such transaction is found and taken by the transaction it was (queued and not
signed in the backup, a version signed again after it, or asked for again later under its key), and nothing is
sent twice (chains/outbox/adopt.py)."""

import secrets
from datetime import timedelta

import pytest
from django.utils import timezone

from chains.models import AdoptedTx, Incident, OutboxTx, SenderNonce
from chains.outbox import outbox_send, outbox_submit
from chains.outbox.send import WAITING_FOR_POOL
from tests.chains.test_outbox import new_address, until_finished, w3_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain_a(devnets_registry, settings):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    settings.OUTBOX_REBROADCAST_SECONDS = 0
    return devnets_registry[0]


def sent(key: str, to: str, value: int) -> OutboxTx:
    tx = outbox_submit(key=key, chain_id=31337, signer="vault", to=to, value=value)
    outbox_send(tx.pk)
    return until_finished(tx)


def counter(vault: str) -> int:
    return SenderNonce.objects.get(chain_id=31337, address=vault).next_nonce


def forget_signing(tx: OutboxTx) -> None:
    """The row as a backup taken before it was signed holds it: queued, no nonce, and the counter before it."""
    OutboxTx.objects.filter(pk=tx.pk).update(
        status="queued",
        nonce=None,
        tx_hash="",
        hashes=[],
        raw_tx="",
        signed_at=None,
        broadcast_at=None,
        finished_at=None,
        block_number=None,
        block_hash="",
        gas_used=None,
        logs=[],
        broadcasts=0,
    )
    SenderNonce.objects.filter(chain_id=31337, address=tx.sender).update(next_nonce=tx.nonce)


def test_a_transaction_queued_in_the_backup_and_sent_after_it_is_adopted_not_sent_again(chain_a, settings):
    w3, to = w3_of(chain_a), new_address()
    first = sent("test:restored", to, 5)
    nonce, tx_hash = first.nonce, first.tx_hash
    forget_signing(first)

    outbox_send(first.pk)  # the restored service's worker asks for it: the chain is ahead of the counter
    first = until_finished(first)

    assert (first.status, first.nonce, first.tx_hash) == ("mined", nonce, tx_hash)
    assert w3.eth.get_balance(to) == 5
    assert counter(settings.VAULT_ADDRESS) == nonce + 1
    adopted = AdoptedTx.objects.get(nonce=nonce)
    assert (adopted.claimed_by, adopted.tx_hash) == ("test:restored", tx_hash)
    assert Incident.objects.filter(kind="tx_adopted").count() == 1

    after = sent("test:after", to, 2)  # the next transaction takes the next nonce
    assert after.nonce == nonce + 1 and w3.eth.get_balance(to) == 7


def test_a_transaction_the_backup_never_knew_is_taken_by_the_key_that_asks_for_it_again(chain_a, settings):
    """Sent under a key created after the backup: kept when found, and the key asked for again (the restored
    service reaching that step) takes it; a transaction with another effect does not."""
    w3, to, other = w3_of(chain_a), new_address(), new_address()
    lost = sent("test:lost", to, 7)
    nonce = lost.nonce
    OutboxTx.objects.filter(pk=lost.pk).delete()
    SenderNonce.objects.filter(chain_id=31337, address=lost.sender).update(next_nonce=nonce)

    unrelated = sent("test:unrelated", other, 3)  # the first signature after the restore finds it
    assert unrelated.nonce == nonce + 1
    kept = AdoptedTx.objects.get(nonce=nonce)
    assert kept.claimed_by == "" and int(kept.value) == 7

    different = outbox_submit(key="test:different", chain_id=31337, signer="vault", to=to, value=8)
    assert different.status == "queued"  # another effect: not taken
    again = outbox_submit(key="test:lost", chain_id=31337, signer="vault", to=to, value=7)
    assert (again.status, again.nonce) == ("broadcast", nonce)
    again = until_finished(again)
    until_finished(different)

    assert (again.status, again.tx_hash) == ("mined", kept.tx_hash)
    assert w3.eth.get_balance(to) == 7 + 8 and w3.eth.get_balance(other) == 3
    kept.refresh_from_db()
    assert kept.claimed_by == "test:lost"


@pytest.mark.unreconciled("the vault sends outside the outbox")
def test_a_kept_transaction_is_claimed_only_within_its_window(chain_a, settings):
    w3, to = w3_of(chain_a), new_address()
    lost = sent("test:old", to, 4)
    OutboxTx.objects.filter(pk=lost.pk).delete()
    SenderNonce.objects.filter(chain_id=31337, address=lost.sender).update(next_nonce=lost.nonce)
    sent("test:finder", new_address(), 1)
    AdoptedTx.objects.filter(nonce=lost.nonce).update(
        found_at=timezone.now() - timedelta(hours=settings.OUTBOX_ADOPT_CLAIM_HOURS, minutes=1)
    )

    again = outbox_submit(key="test:old", chain_id=31337, signer="vault", to=to, value=4)

    assert again.status == "queued"
    until_finished(again)
    assert w3.eth.get_balance(to) == 8


def test_a_version_signed_again_after_the_backup_is_found_not_signed_a_third_time(chain_a, settings):
    """The backup holds the transaction broadcast under one hash; after it, a fee bump re-signed it and that
    version was mined. The nonce is taken on the chain, no receipt for the hash it knows: the version on the
    chain is found and adopted, not signed again at a new nonce."""
    w3, to = w3_of(chain_a), new_address()
    tx = sent("test:bumped", to, 6)
    nonce, mined_hash = tx.nonce, tx.tx_hash
    forgotten = "0x" + secrets.token_hex(32)
    OutboxTx.objects.filter(pk=tx.pk).update(
        status="broadcast",
        tx_hash=forgotten,
        hashes=[forgotten],
        finished_at=None,
        block_number=None,
        block_hash="",
        broadcast_at=timezone.now() - timedelta(minutes=1),
    )

    tx = until_finished(tx)

    assert (tx.status, tx.nonce, tx.tx_hash) == ("mined", nonce, mined_hash.lower())
    assert tx.hashes == [forgotten, mined_hash.lower()]
    assert w3.eth.get_balance(to) == 6
    assert AdoptedTx.objects.get(nonce=nonce).claimed_by == "test:bumped"


@pytest.mark.unreconciled("the vault sends outside the outbox")
def test_the_senders_transactions_in_the_pool_are_waited_for_before_anything_is_signed(chain_a, settings):
    w3, to, elsewhere = w3_of(chain_a), new_address(), new_address()
    sent("test:before", to, 1)
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [False])
    try:
        w3.eth.send_transaction({"from": settings.VAULT_ADDRESS, "to": elsewhere, "value": 9})
        tx = outbox_submit(key="test:waits", chain_id=31337, signer="vault", to=to, value=2)
        outbox_send(tx.pk)
        tx.refresh_from_db()
        assert tx.status == "queued" and tx.nonce is None and tx.error.startswith(WAITING_FOR_POOL)
    finally:
        w3.provider.make_request("evm_setAutomine", [True])
        w3.provider.make_request("evm_setIntervalMining", [1])

    tx = until_finished(tx)

    foreign = AdoptedTx.objects.get(to=elsewhere)
    assert tx.status == "mined" and tx.nonce == foreign.nonce + 1 and foreign.claimed_by == ""
    assert (w3.eth.get_balance(to), w3.eth.get_balance(elsewhere)) == (3, 9)


def test_a_transaction_mined_between_the_look_for_its_receipt_and_the_count_is_not_signed_again(chain_a):
    """The poller looks for the receipt (none yet), the block comes, it reads the count (past the nonce): what
    it saw is what another transaction taking the nonce looks like, but the receipt is there now."""
    from chains.outbox import repair

    w3, to = w3_of(chain_a), new_address()
    tx = sent("test:raced", to, 4)
    nonce, tx_hash = tx.nonce, tx.tx_hash
    OutboxTx.objects.filter(pk=tx.pk).update(
        status="broadcast", finished_at=None, block_number=None, block_hash=""
    )
    tx.refresh_from_db()

    repair.sign_again(tx, latest=nonce + 1)

    tx = until_finished(tx)
    assert (tx.status, tx.nonce, tx.tx_hash, tx.hashes) == ("mined", nonce, tx_hash, [tx_hash])
    assert w3.eth.get_balance(to) == 4
