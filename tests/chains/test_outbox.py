"""The transaction outbox on a real anvil devnet: one transaction per business key, nonces in order, stored
signed bytes, fee bumps of what is stuck, reverts marked failed, and keys that only a signer process holds."""

import logging
import secrets
import time

import pytest
from web3 import Web3

from chains.artifacts import artifact, encode_call
from chains.devnet import devnet_signer_environment
from chains.models import OutboxTx, SenderNonce
from chains.outbox import OutboxConflict, outbox_check_receipts, outbox_poll, outbox_send, outbox_submit
from chains.registry import chain_get
from chains.signers import SignerUnavailable
from chains.tasks import scan_chain_deposits
from tests.conftest import locked_elsewhere

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain_a(devnets_registry, settings):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    return devnets_registry[0]


def w3_of(chain_a):
    return Web3(Web3.HTTPProvider(chain_a[0].rpc_url))


def new_address():
    return Web3.to_checksum_address("0x" + secrets.token_hex(20))


def until_finished(tx, rounds=60):
    for _ in range(rounds):
        outbox_poll()
        tx.refresh_from_db()
        if not tx.in_flight:
            return tx
        time.sleep(0.25)
    pytest.fail(f"{tx.key} is still {tx.status}")


def test_a_business_key_is_one_transaction(chain_a):
    to = new_address()
    first = outbox_submit(key="test:once", chain_id=31337, signer="vault", to=to, value=7)
    again = outbox_submit(key="test:once", chain_id=31337, signer="vault", to=to, value=7)
    assert first.pk == again.pk and OutboxTx.objects.count() == 1
    with pytest.raises(OutboxConflict):
        outbox_submit(key="test:once", chain_id=31337, signer="vault", to=to, value=8)

    until_finished(first)
    outbox_send(first.pk)  # a retried task
    outbox_poll()

    assert first.status == "mined"
    assert w3_of(chain_a).eth.get_balance(to) == 7


def test_nonces_follow_each_other_and_the_signed_bytes_are_kept(chain_a, settings):
    w3 = w3_of(chain_a)
    start = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    txs = [
        outbox_submit(key=f"test:nonce:{n}", chain_id=31337, signer="vault", to=new_address(), value=1)
        for n in range(3)
    ]
    for tx in txs:
        outbox_send(tx.pk)
    for tx in txs:
        until_finished(tx)

    assert [tx.nonce for tx in txs] == [start, start + 1, start + 2]
    assert SenderNonce.objects.get(chain_id=31337, address=settings.VAULT_ADDRESS).next_nonce == start + 3
    for tx in txs:
        assert tx.status == "mined" and tx.hashes == [tx.tx_hash]
        assert Web3.keccak(hexstr=tx.raw_tx).to_0x_hex() == tx.tx_hash  # the bytes that were broadcast


def test_a_transaction_another_worker_signed_is_never_failed_by_a_stale_estimate(chain_a, settings):
    """Two tasks read one queued transaction; the first signs and broadcasts it, and it is mined; the second's
    estimate then reverts (a CREATE2 deployment, an authorization used once: each can happen once). The
    second must leave it to its receipt: the rehearsal's factory deployment was failed this way, mined."""
    from chains.outbox.send import sign

    tx = outbox_submit(
        key="test:signed-elsewhere",
        chain_id=31337,
        signer="vault",
        to=chain_a[1]["contracts"]["AlwaysReverts"],  # its estimate reverts, as a used-up call's would
        value=1,
    )
    stale = OutboxTx.objects.get(pk=tx.pk)  # the second task's copy: queued
    OutboxTx.objects.filter(pk=tx.pk).update(  # the first task signed it meanwhile
        status=OutboxTx.Status.SIGNED, nonce=10_000, tx_hash="0x" + "ab" * 32, raw_tx="0x02"
    )

    sign(stale)

    tx.refresh_from_db()
    assert (tx.status, tx.error, tx.tx_hash) == ("signed", "", "0x" + "ab" * 32)


def test_a_call_that_would_revert_is_failed_and_never_sent(chain_a, settings):
    w3 = w3_of(chain_a)
    nonce = w3.eth.get_transaction_count(settings.VAULT_ADDRESS)
    tx = outbox_submit(
        key="test:reverts",
        chain_id=31337,
        signer="vault",
        to=chain_a[1]["contracts"]["AlwaysReverts"],
        value=1,
    )

    outbox_send(tx.pk)

    tx.refresh_from_db()
    assert tx.status == "failed" and tx.error.startswith("would revert")
    assert (tx.nonce, tx.raw_tx) == (None, "")
    assert w3.eth.get_transaction_count(settings.VAULT_ADDRESS) == nonce  # no nonce spent


def test_a_transaction_that_reverts_on_chain_is_marked_failed(chain_a, settings):
    """Two entries for one player, estimated before either is mined: the second reverts in its block."""
    contracts = chain_a[1]["contracts"]
    approve = outbox_submit(
        key="test:approve",
        chain_id=31337,
        signer="solver",
        to=contracts["dUSDC"],
        data=encode_call("TestToken", "approve", contracts["Tournament"], 10**9),
    )
    outbox_send(approve.pk)
    until_finished(approve)
    player = new_address()
    joins = [
        outbox_submit(
            key=f"test:join:{n}",
            chain_id=31337,
            signer="solver",
            to=contracts["Tournament"],
            data=encode_call("Tournament", "join", player),
        )
        for n in range(2)
    ]
    w3 = w3_of(chain_a)
    w3.provider.make_request("evm_setIntervalMining", [0])  # both are estimated and sent before a block
    try:
        for tx in joins:
            outbox_send(tx.pk)
    finally:
        w3.provider.make_request("evm_setIntervalMining", [1])
    for tx in joins:
        until_finished(tx)

    assert [tx.status for tx in joins] == ["mined", "failed"]
    # Replayed on the state before its block the second entry succeeds (the first one is in the same block):
    # the reason stays unknown, and says why.
    assert joins[1].error == "reverted: reason unknown (the replay succeeds on the state before its block)"
    assert joins[1].block_number is not None
    assert w3_of(chain_a).eth.get_transaction_receipt(joins[1].tx_hash).status == 0


def test_a_stuck_transaction_is_re_signed_with_a_higher_fee_and_paid_once(chain_a, settings):
    w3 = w3_of(chain_a)
    to = new_address()
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [False])
    try:
        tx = outbox_submit(key="test:stuck", chain_id=31337, signer="vault", to=to, value=5)
        outbox_send(tx.pk)
        tx.refresh_from_db()
        first_hash, first_fee = tx.tx_hash, int(tx.max_fee_per_gas)
        settings.OUTBOX_FEE_BUMP_SECONDS = 0

        outbox_poll()

        tx.refresh_from_db()
        assert tx.hashes == [first_hash, tx.tx_hash] and tx.tx_hash != first_hash
        assert int(tx.max_fee_per_gas) >= first_fee * (100 + settings.OUTBOX_FEE_BUMP_PERCENT) // 100
        settings.OUTBOX_FEE_BUMP_SECONDS = 3600
    finally:
        w3.provider.make_request("evm_setIntervalMining", [1])
    until_finished(tx)

    assert tx.status == "mined" and tx.tx_hash in (first_hash, tx.hashes[-1])
    assert w3.eth.get_balance(to) == 5  # one of the two versions, never both


def test_only_a_process_with_the_key_signs_and_the_key_is_never_logged(chain_a, monkeypatch, caplog):
    tx = outbox_submit(key="test:keys", chain_id=31337, signer="vault", to=new_address(), value=1)
    monkeypatch.delenv("VAULT_PRIVATE_KEY")
    with pytest.raises(SignerUnavailable, match="only the signing worker signs"):
        outbox_send(tx.pk)
    tx.refresh_from_db()
    assert tx.status == "queued" and tx.nonce is None

    monkeypatch.setenv("VAULT_PRIVATE_KEY", devnet_signer_environment()["SOLVER_PRIVATE_KEY"])
    with pytest.raises(SignerUnavailable, match="is not the key of vault") as refused:
        outbox_send(tx.pk)
    assert devnet_signer_environment()["SOLVER_PRIVATE_KEY"][2:] not in str(refused.value)

    key = devnet_signer_environment()["VAULT_PRIVATE_KEY"]
    monkeypatch.setenv("VAULT_PRIVATE_KEY", key)
    with caplog.at_level(logging.DEBUG):
        outbox_send(tx.pk)
        until_finished(tx)
    assert tx.status == "mined"
    assert key[2:] not in caplog.text and key[2:] not in str(list(OutboxTx.objects.values()))


def _paused_mining(w3):
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [False])


def _resumed_mining(w3):
    w3.provider.make_request("evm_setAutomine", [True])
    w3.provider.make_request("evm_setIntervalMining", [1])


@pytest.mark.unreconciled("the vault's nonce is taken outside the outbox")
def test_a_transaction_whose_nonce_another_took_is_signed_again_and_paid_once(chain_a, settings):
    """The vault's key sent something else at the outbox's nonce (a key used elsewhere too): no version of
    the outbox's transaction can be mined any more, so it is signed again at the next nonce, once."""
    w3 = w3_of(chain_a)
    to, other = new_address(), new_address()
    _paused_mining(w3)
    try:
        tx = outbox_submit(key="test:taken", chain_id=31337, signer="vault", to=to, value=5)
        outbox_send(tx.pk)
        tx.refresh_from_db()
        taken = tx.nonce
        w3.eth.send_transaction(
            {
                "from": settings.VAULT_ADDRESS,
                "to": other,
                "value": 9,
                "nonce": taken,
                "maxFeePerGas": 10**11,
                "maxPriorityFeePerGas": 5 * 10**10,
            }
        )
        w3.provider.make_request("evm_mine", [])
    finally:
        _resumed_mining(w3)
    settings.OUTBOX_REBROADCAST_SECONDS = 0

    until_finished(tx)

    assert tx.status == "mined" and tx.nonce == taken + 1 and len(tx.hashes) == 2
    assert (w3.eth.get_balance(to), w3.eth.get_balance(other)) == (5, 9)


def test_a_failed_transaction_that_left_the_chain_stays_failed_and_its_nonce_is_filled(chain_a, settings):
    """After evm_revert, a mined transaction is sent again (its owner counted on it) and a failed one is not
    (its owner already acted on the failure): an empty transaction takes its nonce, so it can never succeed."""
    from chains.models import Incident
    from chains.outbox.receipts import receipt_of

    contracts = chain_a[1]["contracts"]
    w3 = w3_of(chain_a)
    approve = outbox_submit(
        key="test:approve2",
        chain_id=31337,
        signer="solver",
        to=contracts["dUSDC"],
        data=encode_call("TestToken", "approve", contracts["Tournament"], 10**9),
    )
    outbox_send(approve.pk)
    until_finished(approve)
    snapshot = w3.provider.make_request("evm_snapshot", [])["result"]
    player = new_address()
    joins = [
        outbox_submit(
            key=f"test:rejoin:{n}",
            chain_id=31337,
            signer="solver",
            to=contracts["Tournament"],
            data=encode_call("Tournament", "join", player),
        )
        for n in range(2)
    ]
    w3.provider.make_request("evm_setIntervalMining", [0])
    try:
        for tx in joins:
            outbox_send(tx.pk)
    finally:
        w3.provider.make_request("evm_setIntervalMining", [1])
    for tx in joins:
        until_finished(tx)
    assert [tx.status for tx in joins] == ["mined", "failed"]
    solver_nonce = w3.eth.get_transaction_count(settings.SOLVER_ADDRESS)

    assert w3.provider.make_request("evm_revert", [snapshot])["result"] is True
    assert w3.eth.get_transaction_count(settings.SOLVER_ADDRESS) == solver_nonce - 2
    filler_key = f"nonce:31337:{settings.SOLVER_ADDRESS}:{joins[1].nonce}"
    for _ in range(60):
        outbox_poll()
        if w3.eth.get_transaction_count(settings.SOLVER_ADDRESS) == solver_nonce:
            break
        time.sleep(0.25)
    for tx in joins:
        tx.refresh_from_db()
    filler = OutboxTx.objects.get(key=filler_key)
    until_finished(joins[0])
    until_finished(filler)

    assert (joins[0].status, joins[1].status, filler.status) == ("mined", "failed", "mined")
    assert filler.nonce == joins[1].nonce and filler.to == filler.sender and int(filler.value) == 0
    assert receipt_of(w3, joins[0]).status == 1 and receipt_of(w3, joins[1]) is None
    tournament = w3.eth.contract(address=contracts["Tournament"], abi=artifact("Tournament")["abi"])
    assert tournament.functions.joined(player).call() is True
    assert w3.eth.get_transaction_count(settings.SOLVER_ADDRESS) == solver_nonce
    assert set(Incident.objects.filter(kind="tx_reorged").values_list("subject", flat=True)) == {
        f"outbox:{joins[0].key}",
        f"outbox:{joins[1].key}",
    }


def test_fee_bumps_reach_the_cap_and_stop_and_a_transaction_behind_another_is_never_bumped(chain_a, settings):
    from chains.models import Incident

    w3 = w3_of(chain_a)
    _paused_mining(w3)
    try:
        first = outbox_submit(key="test:capped", chain_id=31337, signer="vault", to=new_address(), value=1)
        behind = outbox_submit(key="test:behind", chain_id=31337, signer="vault", to=new_address(), value=1)
        outbox_send(first.pk)
        outbox_send(behind.pk)
        first.refresh_from_db()
        behind.refresh_from_db()
        assert behind.nonce == first.nonce + 1
        start_fee = int(first.max_fee_per_gas)
        settings.OUTBOX_MAX_FEE_PER_GAS_GWEI = start_fee * 1.4 / 10**9
        settings.OUTBOX_FEE_BUMP_SECONDS = 0

        fees = []
        for _ in range(4):
            outbox_poll()
            first.refresh_from_db()
            fees.append(int(first.max_fee_per_gas))
        behind.refresh_from_db()
    finally:
        settings.OUTBOX_FEE_BUMP_SECONDS = 3600
        _resumed_mining(w3)
    cap = int(start_fee * 1.4)

    assert fees[0] > start_fee and fees[1] == fees[2] == fees[3] == cap
    assert len(first.hashes) == 3  # two bumps, then no higher bid
    assert len(behind.hashes) == 1  # waiting behind the first: no fee would help it
    assert Incident.objects.filter(kind="fee_cap", subject="outbox:test:capped").count() == 1
    until_finished(first)
    until_finished(behind)
    assert (first.status, behind.status) == ("mined", "mined")


def test_a_transaction_the_vault_cannot_pay_gas_for_waits_and_goes_out_once_topped_up(
    chain_a, settings, caplog, staff
):
    import dataclasses

    from chains.watcher import scan_chain

    chain = chain_a[0]
    settings.CHAINS = [dataclasses.asdict(chain) | {"vault_gas_threshold": 10**18}]
    w3 = w3_of(chain_a)
    vault = settings.VAULT_ADDRESS
    kept = w3.eth.get_balance(vault)
    w3.provider.make_request("anvil_setBalance", [vault, hex(10_000)])  # not even one transaction's gas
    try:
        to = new_address()
        tx = outbox_submit(key="test:no-gas", chain_id=31337, signer="vault", to=to, value=1)
        with caplog.at_level(logging.WARNING):
            outbox_send(tx.pk)
            for _ in range(3):
                outbox_poll()
            w3.provider.make_request("evm_mine", [])
            w3.provider.make_request("evm_mine", [])
            assert scan_chain(31337) is not None
        tx.refresh_from_db()
        assert tx.status == "queued" and tx.nonce is None and tx.error.startswith("waiting for gas")
        assert "the vault's gas is low: 10000 wei" in caplog.text
        assert "LOW" in staff.get("/admin/chains/chain/").content.decode()
    finally:
        w3.provider.make_request("anvil_setBalance", [vault, hex(kept)])

    until_finished(tx)
    assert (tx.status, tx.error) == ("mined", "") and w3.eth.get_balance(to) == 1


def test_the_receipts_look_finishes_what_is_mined_and_nothing_else(chain_a):
    """Beat's quick look between full polls: a mined transaction is finished, one not yet broadcast is left
    to the full poll."""
    recipient = new_address()
    sent = outbox_submit(key="test:receipts:sent", chain_id=31337, signer="vault", to=recipient, value=3)
    waiting = outbox_submit(  # another sender's: not sent with the vault's
        key="test:receipts:waiting", chain_id=31337, signer="solver", to=new_address(), value=1
    )
    outbox_send(sent.pk)
    for _ in range(40):
        if w3_of(chain_a).eth.get_balance(recipient) == 3:
            break
        time.sleep(0.25)
    time.sleep(1.2)  # a block on top: its confirmation
    assert outbox_check_receipts() == 1
    sent.refresh_from_db()
    waiting.refresh_from_db()
    assert (sent.status, waiting.status) == ("mined", "queued")
    assert outbox_check_receipts() == 0  # finished once


def test_a_bursts_receipts_are_read_in_one_request_whichever_version_was_mined(chain_a, monkeypatch):
    """Many transactions mined together on one chain: the receipts look asks the node once (one JSON-RPC
    batch with the head), finishes each from its own receipt, and finds a re-signed transaction by the version
    that was mined."""
    from chains.client import FailoverProvider

    sent = _mined_burst(chain_a, 5)
    w3 = w3_of(chain_a)
    resigned = sent[0]
    resigned.refresh_from_db()
    # as if a fee bump signed it again and the first version was the one mined
    OutboxTx.objects.filter(pk=resigned.pk).update(hashes=[resigned.tx_hash, "0x" + "ab" * 32])
    asked = []
    original = FailoverProvider._send
    monkeypatch.setattr(FailoverProvider, "_send", lambda self, call: asked.append(1) or original(self, call))

    assert outbox_check_receipts() == 5

    assert len(asked) == 1
    for n, tx in enumerate(sent):
        tx.refresh_from_db()
        receipt = w3.eth.get_transaction_receipt(tx.hashes[0])
        assert (tx.status, tx.tx_hash, tx.block_number, tx.gas_used) == (
            "mined",
            receipt["transactionHash"].to_0x_hex(),
            receipt["blockNumber"],
            receipt["gasUsed"],
        )
        assert w3.eth.get_balance(tx.to) == n + 1


def test_a_scan_that_reads_a_new_block_finishes_the_receipts_in_it_on_its_chain_only(
    chain_a, devnets_registry
):
    """The receipts follow the watcher: the scan that confirms a block reads the service's own transactions in
    it at once, without waiting for the receipt poll, and leaves the other chain's to its own scan."""
    here, there = w3_of(chain_a), w3_of(devnets_registry[1])
    recipient = new_address()
    scan_chain_deposits(31337)  # the cursor at the confirmed head
    _paused_mining(here)
    _paused_mining(there)
    try:
        sent = outbox_submit(
            key="test:scan-receipts:here", chain_id=31337, signer="vault", to=recipient, value=5
        )
        other = outbox_submit(
            key="test:scan-receipts:there", chain_id=31338, signer="vault", to=new_address(), value=5
        )
        outbox_send(sent.pk)
        outbox_send(other.pk)
        for w3 in (here, there):
            for _ in range(chain_get(31337).confirmations or 1):
                w3.provider.make_request("evm_mine", [])
        assert here.eth.get_balance(recipient) == 5

        scan_chain_deposits(31337)

        sent.refresh_from_db()
        other.refresh_from_db()
        assert (sent.status, other.status) == ("mined", "broadcast")
        assert sent.block_number is not None
    finally:
        _resumed_mining(here)
        _resumed_mining(there)


@pytest.mark.unreconciled("its node is behind a proxy that ends with the test")
def test_a_burst_reads_the_fee_market_once_and_a_fee_bump_reads_it_now(chain_a, settings, monkeypatch):
    """First signatures share the chain's latest base and priority fees for a while (a burst of payments signs
    dozens in one block); a bump of a stuck transaction asks the node again."""
    import dataclasses

    from chains.client import web3_for
    from chains.outbox import fees
    from tests.rpc_proxy import rpc_proxies

    chain = chain_a[0]
    monkeypatch.setattr(
        fees, "MARKET_SECONDS", 3600
    )  # what a burst within the second sees, without the clock
    fees._markets.clear()
    with rpc_proxies(chain.rpc_url, count=1) as (node,):
        settings.CHAINS = [dataclasses.asdict(chain) | {"rpc_urls": [node.url]}]
        txs = [
            outbox_submit(key=f"test:market:{n}", chain_id=31337, signer="vault", to=new_address(), value=1)
            for n in range(3)
        ]
        for tx in txs:
            outbox_send(tx.pk)
        signed = [OutboxTx.objects.get(pk=tx.pk) for tx in txs]
        assert {t.status for t in signed} == {"broadcast"}
        assert node.methods["eth_maxPriorityFeePerGas"] == 1 and node.methods["eth_getBlockByNumber"] == 1
        assert len({(t.max_fee_per_gas, t.max_priority_fee_per_gas) for t in signed}) == 1

        bumped = fees.fees_for(chain_get(31337), web3_for(chain_get(31337)), bump_from=signed[0])

        assert node.methods["eth_maxPriorityFeePerGas"] == 2
        assert bumped is not None and bumped[0] > int(signed[0].max_fee_per_gas)
    fees._markets.clear()


def test_a_senders_queued_transactions_are_signed_together_and_make_one_block(chain_a, settings, monkeypatch):
    """A burst: the first send takes the sender's other queued transactions with it (one batch of estimates,
    one lock of its nonce, one batch of broadcasts), so they are mined in the same block at consecutive nonces.
    One that would revert is left to its own task, which fails it without a nonce; the burst's other tasks ask
    the node nothing; another sender's transaction is not taken."""
    from chains.client import FailoverProvider

    w3 = w3_of(chain_a)
    recipients = [new_address() for _ in range(5)]
    txs = [
        outbox_submit(key=f"test:batch:{n}", chain_id=31337, signer="vault", to=to, value=n + 1)
        for n, to in enumerate(recipients)
    ]
    reverting = outbox_submit(
        key="test:batch:reverts", chain_id=31337, signer="vault", to=chain_a[1]["contracts"]["AlwaysReverts"]
    )
    txs.append(
        outbox_submit(key="test:batch:last", chain_id=31337, signer="vault", to=new_address(), value=9)
    )
    solvers = outbox_submit(
        key="test:batch:solver", chain_id=31337, signer="solver", to=new_address(), value=1
    )
    start = w3.eth.get_transaction_count(settings.VAULT_ADDRESS, "pending")
    asked = []
    original = FailoverProvider._send
    monkeypatch.setattr(FailoverProvider, "_send", lambda self, call: asked.append(1) or original(self, call))
    _paused_mining(w3)
    try:
        outbox_send(txs[0].pk)
        first_send = len(asked)
        for tx in txs[1:]:
            outbox_send(tx.pk)  # the burst's other tasks
        assert len(asked) == first_send  # they found their transactions sent
        reverting.refresh_from_db()
        assert reverting.status == "queued"  # left to its own task
        outbox_send(reverting.pk)
        for tx in [*txs, reverting, solvers]:
            tx.refresh_from_db()
        assert [tx.status for tx in txs] == ["broadcast"] * 6
        assert [tx.nonce for tx in txs] == list(range(start, start + 6))
        assert (reverting.status, reverting.nonce) == ("failed", None)
        assert reverting.error.startswith("would revert")
        assert solvers.status == "queued"
        # a handful of requests (the batch of reads and estimates, the market, the batch of broadcasts), not
        # five for each transaction
        assert first_send <= 6
        w3.provider.make_request("evm_mine", [])
    finally:
        _resumed_mining(w3)
    blocks = {w3.eth.get_transaction_receipt(tx.tx_hash)["blockNumber"] for tx in txs}
    assert len(blocks) == 1
    assert [w3.eth.get_balance(to) for to in recipients] == [1, 2, 3, 4, 5]
    assert SenderNonce.objects.get(chain_id=31337, address=settings.VAULT_ADDRESS).next_nonce == start + 6


def test_a_lone_transaction_is_read_for_in_one_batch_and_one_that_would_revert_still_says_why(
    chain_a, monkeypatch
):
    """A transaction signed alone asks the node for its estimate, the sender's balance and pending count and the
    fee market in one JSON-RPC batch: it goes out after two requests (the batch, the broadcast), not seven.
    One whose estimate fails is asked for alone, so its failure carries the revert's reason."""
    from chains.client import FailoverProvider
    from chains.outbox import fees

    fees._markets.clear()  # the market is read with the rest
    asked = []
    original = FailoverProvider._send
    monkeypatch.setattr(FailoverProvider, "_send", lambda self, call: asked.append(1) or original(self, call))
    to = new_address()
    tx = outbox_submit(key="test:lone:pays", chain_id=31337, signer="vault", to=to, value=7)

    outbox_send(tx.pk)

    tx.refresh_from_db()
    assert (tx.status, len(asked)) == ("broadcast", 2)
    assert list(fees._markets) == [31337]
    reverting = outbox_submit(
        key="test:lone:reverts", chain_id=31337, signer="vault", to=chain_a[1]["contracts"]["AlwaysReverts"]
    )
    outbox_send(reverting.pk)
    reverting.refresh_from_db()
    assert (reverting.status, reverting.nonce) == ("failed", None)
    assert reverting.error.startswith("would revert: ")
    assert reverting.error != "would revert: "
    fees._markets.clear()


def test_a_batch_the_sender_cannot_pay_for_whole_is_signed_one_at_a_time(chain_a, settings):
    """What the vault holds pays for the first transaction only: it is signed, the next waits for gas with
    its reason, queued, holding no nonce (never failed, never a refund's reason)."""
    w3 = w3_of(chain_a)
    balance = w3.eth.get_balance(settings.VAULT_ADDRESS)
    first = outbox_submit(key="test:batch:pays", chain_id=31337, signer="vault", to=new_address(), value=1)
    second = outbox_submit(
        key="test:batch:too-much", chain_id=31337, signer="vault", to=new_address(), value=balance - 1000
    )

    outbox_send(first.pk)

    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == "broadcast"
    assert (second.status, second.nonce) == ("queued", None)
    outbox_send(second.pk)
    second.refresh_from_db()
    assert (second.status, second.nonce) == ("queued", None) and second.error.startswith("waiting for gas")
    OutboxTx.objects.filter(pk=second.pk).delete()  # nothing else may spend the vault's gas here
    until_finished(first)


def _mined_burst(chain_a, how_many: int) -> list[OutboxTx]:
    """`how_many` of the vault's transfers, sent, mined and confirmed."""
    recipients = [new_address() for _ in range(how_many)]
    sent = [
        outbox_submit(key=f"test:shared:{n}", chain_id=31337, signer="vault", to=to, value=n + 1)
        for n, to in enumerate(recipients)
    ]
    for tx in sent:
        outbox_send(tx.pk)
    w3 = w3_of(chain_a)
    for _ in range(40):
        if all(w3.eth.get_balance(to) for to in recipients):
            break
        time.sleep(0.25)
    time.sleep(1.2)  # a block on top: their confirmation
    return sent


def test_a_bursts_confirmed_transactions_are_queued_to_the_workers_and_each_finished_once(
    chain_a, settings, monkeypatch
):
    from chains.tasks import outbox_finish_task
    from ledger.models import Posting

    settings.OUTBOX_FINISH_HERE = 2
    sent = _mined_burst(chain_a, 3)
    queued = []
    monkeypatch.setattr(outbox_finish_task, "delay", queued.append)

    assert outbox_check_receipts() == 3  # no worker took any: the pass finished them all

    assert sorted(queued) == sorted(tx.pk for tx in sent)
    for tx_id in queued:  # the workers' tasks, late: each finds its transaction finished
        outbox_finish_task(tx_id)
    for tx in sent:
        tx.refresh_from_db()
        assert tx.status == "mined"
        assert Posting.objects.filter(key__startswith=f"outbox:{tx.key}:").count() == 1


def test_a_worker_finishes_a_confirmed_transaction_from_the_receipt_it_reads(chain_a, settings):
    from chains.tasks import outbox_finish_task

    (tx,) = _mined_burst(chain_a, 1)

    outbox_finish_task(tx.pk)

    tx.refresh_from_db()
    receipt = w3_of(chain_a).eth.get_transaction_receipt(tx.tx_hash)
    assert (tx.status, tx.block_number, tx.gas_used) == ("mined", receipt["blockNumber"], receipt["gasUsed"])


@pytest.mark.django_db(transaction=True)
def test_a_transaction_another_process_is_finishing_is_passed_by_not_waited_for(chain_a, settings):
    from chains.tasks import outbox_finish_task

    (tx,) = _mined_burst(chain_a, 1)

    with locked_elsewhere(OutboxTx, tx.pk):  # the receipts pass, say, in the middle of finishing it
        outbox_finish_task(tx.pk)  # passes it by at once (waiting, it would finish it after 20 s)
        tx.refresh_from_db()
        assert tx.status == "broadcast"
    outbox_finish_task(tx.pk)
    tx.refresh_from_db()
    assert tx.status == "mined"
