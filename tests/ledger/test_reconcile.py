"""The ledger against two real anvil devnets: what settlement posts balances, `reconcile` finds the vault, the
solver and the deposit addresses holding exactly what the ledger says, and a transfer behind the service's back
is reported to the unit."""

from __future__ import annotations

from collections import defaultdict

import pytest
from django.core.management import call_command

from chains.devnet import NATIVE
from chains.wallet import devnet_transfer
from ledger.models import Entry, Posting, ReconcileRun, ReconcileStart
from ledger.reconcile import adopt, reconcile_chain
from tests.orders.devnet_checkout import checkout, drive, pay, random_address, service_round, w3_of

pytestmark = pytest.mark.django_db

VAULT_ACCOUNT = 0  # anvil's account 0 is the devnets' vault


@pytest.fixture
def devnets(devnets_registry, settings):
    """Both devnets, with the ledger opened at what the vault and the solver hold now: the devnets were funded
    (and earlier tests settled) before this test's database existed."""
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    call_command("reconcile", "--open-devnets")  # what `make run` does after deploying its devnets
    for chain_id in (31337, 31338):
        assert reconcile_chain(chain_id).ok
    assert Posting.objects.filter(kind="adjustment").exists()
    return devnets_registry


def every_posting_balances() -> None:
    totals: dict[tuple[int, int, str], int] = defaultdict(int)
    for posting, chain, token, side, amount in Entry.objects.values_list(
        "posting_id", "account__chain_id", "account__token", "side", "amount"
    ):
        totals[(posting, chain, token)] += amount if side == "debit" else -amount
    assert not {k: v for k, v in totals.items() if v}


def differences(run: ReconcileRun) -> dict[tuple[str, str], int]:
    return {(r["kind"], r["token"]): int(r["difference"]) for r in run.rows if int(r["difference"])}


def mine(devnets) -> None:
    """A block on each devnet: anvil mines only when sent a transaction, and the watcher confirms a block once
    the next one is there."""
    for chain, _ in devnets:
        w3_of((chain, None)).provider.make_request("evm_mine", [])


def settle_everywhere(devnets) -> None:
    """Rounds until the watcher's confirmed block is past what settlement sent."""
    for _ in range(3):
        service_round()
        mine(devnets)
    service_round()


def test_a_settled_order_is_posted_and_reconciles_on_both_chains(devnets, admin_client, settings):
    a, b = devnets
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)

    order = drive(order_id)
    settle_everywhere(devnets)

    assert order.status == "executed"
    kinds = set(Posting.objects.filter(order_id=order_id).values_list("kind", flat=True))
    assert {"deposit", "sweep", "delivery"} <= kinds
    deposit = Entry.objects.get(posting__key__startswith="deposit:", side="debit", posting__order_id=order_id)
    assert deposit.amount == int(order.src_amount) and deposit.account.kind == "deposit_address"
    gas = Entry.objects.filter(account__kind="gas", posting__order_id=order_id)
    assert gas.count() >= 2 and all(e.amount > 0 for e in gas)
    fee = Entry.objects.get(posting__key=f"fee:{order_id}", side="debit")
    received = int(order.settlement["srcAmountReceived"])
    assert fee.account.kind == "fees" and fee.account.ref == settings.VAULT_ADDRESS.lower()
    assert fee.amount == received * order.settlement["feeBps"] // 10_000 > 0
    every_posting_balances()
    for chain_id in (31337, 31338):
        run = reconcile_chain(chain_id)
        assert run.ok, (run.error, run.rows)
        assert {r["kind"] for r in run.rows} >= {"vault", "solver"}


@pytest.mark.unreconciled("tokens leave the vault behind the service's back")
def test_tokens_moved_out_of_the_vault_behind_the_services_back_are_reported_to_the_unit(devnets, capsys):
    a, _ = devnets
    dusdc = a[1]["contracts"]["dUSDC"]
    devnet_transfer(
        chain=a[0], token=dusdc, to=random_address(), amount=1_234_567, from_account=VAULT_ACCOUNT
    )
    settle_everywhere(devnets)

    run = reconcile_chain(31337)

    found = differences(run)
    assert found[("vault", dusdc.lower())] == -1_234_567
    assert found[("vault", NATIVE)] < 0  # the gas of that transfer, paid by the vault's key
    assert set(found) == {("vault", dusdc.lower()), ("vault", NATIVE)}
    assert not run.ok and run.resolved_at is None
    with pytest.raises(SystemExit) as exit_:
        call_command("reconcile", "--chain", "31337")
    assert exit_.value.code == 1
    out = capsys.readouterr().out
    assert "-1234567" in out and "difference(s)" in out


def test_a_clean_run_closes_the_open_difference_and_refuses_a_block_beyond_the_watcher(devnets):
    a, _ = devnets
    devnet_transfer(chain=a[0], token=NATIVE, to=random_address(), amount=10**15, from_account=VAULT_ACCOUNT)
    settle_everywhere(devnets)
    differing = reconcile_chain(31337)
    assert differing.differences == 1
    adopt(differing, reason="staff withdrew 0.001 ETH on purpose", by="ops")

    clean = reconcile_chain(31337)

    assert clean.ok
    assert Posting.objects.get(kind="adjustment", memo__startswith="staff withdrew").block_number == (
        differing.block_number
    )
    beyond = reconcile_chain(31337, at_block=clean.block_number + 1000)
    assert "beyond what the watcher confirmed" in beyond.error


@pytest.mark.unreconciled("it opens the devnets itself and counts their openings")
def test_a_devnet_opened_again_counts_only_its_new_life(devnets):
    """`make run` starts its devnets from block 0 each time, on a database that may outlive them: opening them
    again starts their reconciliation afresh, without the earlier postings (which would count twice)."""
    first = Posting.objects.filter(kind="adjustment").count()

    call_command("reconcile", "--open-devnets")

    assert ReconcileStart.objects.filter(chain_id__in=(31337, 31338)).count() == 2
    assert Posting.objects.filter(kind="adjustment").count() == 2 * first  # each balance opened again
    for chain_id in (31337, 31338):
        assert reconcile_chain(chain_id).ok


def test_the_hourly_task_reconciles_every_chain_with_a_node_and_skips_those_without(devnets, settings):
    from chains.registry import chains
    from ledger.tasks import reconcile_chains

    settings.CHAINS = [*settings.CHAINS, {"chain_id": 8453, "name": "Base", "native_symbol": "ETH"}]
    assert 8453 in {chain.chain_id for chain in chains()}  # in the registry, with no node to read

    assert reconcile_chains() == {31337: 0, 31338: 0}
    assert not ReconcileRun.objects.filter(chain_id=8453).exists()


def test_a_devnet_restarted_from_block_0_opens_at_what_its_new_life_holds(devnets):
    """`make run` on a database that outlived its devnets: the fresh node numbers its blocks as the old one
    did, so its opening balances are adopted at a height the previous life's were adopted at too. They are
    posted all the same (keyed by the block's hash as well), and the new life reconciles. (Last in this
    module: it resets the module's Devnet A.)"""
    from chains.devnet import deploy, forget_devnet_transactions

    (chain_a, _), _ = devnets
    for _ in range(2):  # two lives opened at the same height
        w3_of((chain_a, None)).provider.make_request("anvil_reset", [])
        deploy(chain_a)
        forget_devnet_transactions([chain_a.chain_id])
        call_command("reconcile", "--open-devnets")
        run = reconcile_chain(chain_a.chain_id)
        assert run.ok, [r for r in run.rows if r["difference"] != "0"]
