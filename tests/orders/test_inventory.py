"""Delivery from the solver's inventory ("fast finish", orders/inventory.py) with the relay provider as the way
to the other chain: a swap the stock covers is delivered beside the sweep, without the provider; limits send
the rest to the provider; the stock is refilled through the provider and every unit reconciles (issue 43)."""

from __future__ import annotations

import contextlib
import io

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from web3 import Web3
from web3.exceptions import ContractCustomError

from chains.artifacts import artifact
from chains.models import OutboxTx
from ledger.models import Posting
from ledger.reconcile import reconcile_chain
from orders.inventory import (
    inventories_refill,
    inventory_front,
    inventory_swept,
    solver_balance,
    stock,
    vault_free,
)
from orders.models import Inventory, InventoryFront, InventoryRefill, Order
from orders.router import router_address, router_deploy_submit, router_state, solver_allowance
from tests.orders.devnet_checkout import (
    PAYER,
    checkout,
    drive,
    erc20,
    pay,
    random_address,
    run_until,
    service_round,
    w3_of,
)

pytestmark = pytest.mark.django_db

BIG = 10**30


def stock_of(a, b, **limits) -> Inventory:
    """The solver's dUSDC on Devnet B as an inventory, refilled from the vault's dUSDC on Devnet A."""
    values = {"low_mark": 0, "target": 0, "max_order": BIG, "max_outstanding": BIG} | limits
    return Inventory.objects.create(
        chain_id=31338,
        token=erc20(b).address.lower(),
        refill_chain_id=31337,
        refill_token=erc20(a).address.lower(),
        **values,
    )


def test_a_swap_the_inventory_covers_is_delivered_beside_the_sweep_without_the_provider(
    standin, devnets_registry, admin_client
):
    a, b = devnets_registry
    stock_of(a, b)
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    recipient = Order.objects.get(pk=order_id).recipient_address
    solver_before = erc20(b).functions.balanceOf(settings.SOLVER_ADDRESS).call()
    payer_before = erc20(a).functions.balanceOf(w3_of(a).eth.accounts[PAYER]).call()
    vault_before = erc20(a).functions.balanceOf(settings.VAULT_ADDRESS).call()
    pay(order_id, a)

    order = drive(
        order_id, also=lambda o: InventoryFront.objects.filter(order=o, swept_at__isnull=False).exists()
    )

    assert order.status == "executed", order.error_details
    delivered = int(order.settlement["dstAmount"])
    front = InventoryFront.objects.get(order=order)
    assert (int(front.amount), front.tx.key, front.tx.signer) == (
        delivered,
        f"order:{order_id}:relay",
        "solver",
    )
    reasons = list(order.status_changes.values_list("reason", flat=True))
    assert "the solver delivers beside the sweep" in reasons  # not after it
    assert standin.deposited() == []  # the provider was paid nothing (its quote priced the order, no more)
    assert not OutboxTx.objects.filter(key__startswith=f"order:{order_id}:relay:").exists()
    assert erc20(b).functions.balanceOf(recipient).call() == delivered
    assert erc20(b).functions.balanceOf(settings.SOLVER_ADDRESS).call() == solver_before - delivered
    assert erc20(a).functions.balanceOf(settings.VAULT_ADDRESS).call() == vault_before + int(order.src_amount)
    assert erc20(a).functions.balanceOf(w3_of(a).eth.accounts[PAYER]).call() == payer_before - int(
        order.src_amount
    )


def test_a_fronted_delivery_executes_its_order_where_its_receipt_is_read(
    standin, devnets_registry, admin_client, django_capture_on_commit_callbacks
):
    """The receipts pass that finishes the solver's delivery executes its order as soon as that commits, in the
    same process: not from the back of the settlement queue, which in a burst is seconds behind. (No worker
    consumes that queue here: only this process can execute the order.)"""
    import time

    from chains.outbox import outbox_check_receipts

    a, b = devnets_registry
    stock_of(a, b)
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)
    # Broadcast, or already mined when another transaction's block confirmed it within the same round (on a
    # loaded machine): then the round's own receipts pass executed the order, as the loop below would.
    run_until(
        lambda: InventoryFront.objects.filter(
            order_id=order_id, tx__status__in=(OutboxTx.Status.BROADCAST, OutboxTx.Status.MINED)
        ).exists(),
        order_id,
        what="the solver's delivery broadcast",
    )
    front = InventoryFront.objects.get(order_id=order_id)
    if front.tx.status == OutboxTx.Status.BROADCAST:
        assert Order.objects.get(pk=order_id).status == "relay"

    for _ in range(40):
        with django_capture_on_commit_callbacks(execute=True):
            outbox_check_receipts(chain_id=31338)
        front.tx.refresh_from_db()
        if not front.tx.in_flight:
            break
        time.sleep(0.25)

    order = Order.objects.get(pk=order_id)
    assert (front.tx.status, order.status) == (OutboxTx.Status.MINED, "executed")
    assert order.relay_txs.get().tx_hash == front.tx.tx_hash


def test_an_order_larger_than_the_largest_fronted_takes_the_relay_provider(
    standin, devnets_registry, admin_client
):
    a, b = devnets_registry
    stock_of(a, b, max_order=1_000_000)
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")  # 10 dUSDC
    pay(order_id, a)

    order = drive(order_id, timeout=120)

    assert order.status == "executed", order.error_details
    assert not InventoryFront.objects.filter(order=order).exists()
    assert len(standin.deposited()) == 1 and order.relay_txs.get().chain == 31338


def test_fronting_stops_at_the_outstanding_limit_and_the_stock_and_starts_again_once_swept(
    devnets_registry, admin_client, settings
):
    """Checked on the fronting itself (orders not paid: what is fronted is never sent in this test)."""
    settings.RELAY_PROVIDER = "relay"
    a, b = devnets_registry
    inventory = stock_of(a, b, max_outstanding=15_000_000)
    first, second = (checkout(admin_client, a[1], b[1], "swap")[0] for _ in range(2))
    first, second = Order.objects.get(pk=first), Order.objects.get(pk=second)

    assert inventory_front(first, 10_000_000) is not None
    assert inventory_front(first, 10_000_000) == InventoryFront.objects.get(order=first)  # asked once
    assert inventory_front(second, 10_000_000) is None  # 20 would be outstanding
    assert stock(inventory, 0).outstanding == 10_000_000
    inventory_swept(first)
    balance = solver_balance(inventory)
    assert balance is not None and stock(inventory, balance).outstanding == 0
    assert inventory_front(second, balance + 1) is None  # more than the solver holds, less what goes out
    front = inventory_front(second, 10_000_000)
    assert front is not None and front.tx.status == OutboxTx.Status.QUEUED
    assert stock(inventory, balance).committed == 20_000_000  # both deliveries on their way out


def test_a_balance_read_before_a_front_was_mined_still_counts_that_front_as_going_out(
    devnets_registry, admin_client, settings
):
    """Fronts read the solver's balance before they take the inventory's lock, at a block they name: a front
    mined after that block is still on its way out as far as that balance knows, so the stock is never counted
    twice."""
    import time

    from chains.outbox import outbox_poll, outbox_send

    settings.RELAY_PROVIDER = "relay"
    a, b = devnets_registry
    inventory = stock_of(a, b)
    order = Order.objects.get(pk=checkout(admin_client, a[1], b[1], "swap")[0])
    read_at = w3_of(b).eth.block_number
    balance = solver_balance(inventory, at_block=read_at)
    assert balance is not None

    front = inventory_front(order, 10_000_000)
    assert front is not None
    outbox_send(front.tx.pk)
    for _ in range(80):
        outbox_poll()
        front.tx.refresh_from_db()
        if not front.tx.in_flight:
            break
        time.sleep(0.25)

    assert front.tx.status == OutboxTx.Status.MINED and front.tx.block_number > read_at
    assert stock(inventory, balance, read_at=read_at).available == balance - 10_000_000
    now = w3_of(b).eth.block_number
    assert (
        stock(inventory, solver_balance(inventory, at_block=now), read_at=now).available
        == balance - 10_000_000
    )
    # without the block it was read at, the earlier balance would offer the delivered 10 a second time
    assert stock(inventory, balance).available == balance


def test_a_stock_below_its_low_mark_is_refilled_through_the_provider_and_reconciles(
    standin, devnets_registry, settings
):
    a, b = devnets_registry
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    call_command("reconcile", "--open-devnets")
    held = erc20(b).functions.balanceOf(settings.SOLVER_ADDRESS).call()
    inventory = stock_of(a, b, low_mark=held + 1, target=held + 7_000_000)
    vault_before = erc20(a).functions.balanceOf(settings.VAULT_ADDRESS).call()

    def filled() -> bool:
        inventories_refill()
        for devnet in (a, b):
            w3_of(devnet).provider.make_request("evm_mine", [])
        return InventoryRefill.objects.filter(status__in=("filled", "failed")).exists()

    run_until(filled, timeout=120, what="the refill's fill")

    refill = InventoryRefill.objects.get()
    assert (refill.status, int(refill.amount)) == ("filled", 7_000_000), refill.error
    assert erc20(b).functions.balanceOf(settings.SOLVER_ADDRESS).call() == held + 7_000_000
    assert erc20(a).functions.balanceOf(settings.VAULT_ADDRESS).call() == vault_before - 7_000_000
    quote = standin.quotes[-1]
    assert (quote["recipient"], quote["refundTo"]) == (settings.SOLVER_ADDRESS, settings.VAULT_ADDRESS)
    fill = Posting.objects.get(key=f"inventory-fill:31338:{refill.fill_tx}")
    assert {(e.account.kind, e.side, int(e.amount)) for e in fill.entries.select_related("account")} == {
        ("solver", "debit", 7_000_000),
        ("recipient", "credit", 7_000_000),
    }
    inventories_refill()
    assert InventoryRefill.objects.count() == 1  # at its target: nothing more asked
    for _ in range(3):
        service_round()
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok
    assert inventory.refills.get() == refill


def set_inventory(a, b, *, low: int) -> None:
    """`manage.py inventory set` for the solver's dUSDC on Devnet B (target 10, at most 3 per order and 4 out)."""
    call_command(
        "inventory",
        "set",
        "31338",
        erc20(b).address,
        "--low",
        str(low),
        "--target",
        "10",
        "--max-order",
        "3",
        "--max-outstanding",
        "4",
        "--refill-from",
        f"31337:{erc20(a).address}",
    )


def test_the_inventory_is_in_chains_check_and_set_by_its_command(devnets_registry, capsys):
    a, b = devnets_registry
    set_inventory(a, b, low=5)
    inventory = Inventory.objects.get()
    assert (int(inventory.low_mark), int(inventory.target), inventory.token) == (
        5,
        10,
        erc20(b).address.lower(),
    )
    with contextlib.suppress(CommandError):  # the suite runs no watcher: the devnet may read as lagging
        call_command("chains", "check", "31338")
    shown = capsys.readouterr().out
    assert "INVENTORY" in shown and erc20(b).address.lower() in shown and "5 / 10" in shown

    with pytest.raises(CommandError, match="at least the low mark"):
        set_inventory(a, b, low=50)
    assert int(Inventory.objects.get().low_mark) == 5  # a rejected change changes nothing


def test_staff_see_and_set_an_inventory_in_the_admin_and_a_bad_number_is_refused_beside_its_field(
    devnets_registry, staff
):
    a, b = devnets_registry
    inventory = stock_of(a, b, low_mark=5, target=10)
    InventoryRefill.objects.create(inventory=inventory, amount=7, status="filled")

    listed = staff.get("/admin/orders/inventory/")
    page = staff.get(f"/admin/orders/inventory/{inventory.pk}/change/")
    form = {
        "chain_id": "31338",
        "token": erc20(b).address,
        "low_mark": "lots",
        "target": "10",
        "max_order": "1",
        "max_outstanding": "1",
        "refill_chain_id": "31337",
        "refill_token": erc20(a).address,
        "enabled": "on",
        "refills-TOTAL_FORMS": "1",
        "refills-INITIAL_FORMS": "1",
        "refills-MIN_NUM_FORMS": "0",
        "refills-MAX_NUM_FORMS": "1000",
        "refills-0-id": str(inventory.refills.get().pk),
        "refills-0-inventory": str(inventory.pk),
    }
    refused = staff.post(f"/admin/orders/inventory/{inventory.pk}/change/", form)

    assert listed.status_code == 200 and b"filled \xc2\xb7 7" in listed.content
    assert page.status_code == 200 and b"the solver holds" in page.content  # its stock on chain, now
    assert refused.status_code == 200 and b"Enter a whole number" in refused.content
    assert int(Inventory.objects.get().low_mark) == 5


def test_a_refill_spends_only_what_no_order_still_settling_may_need(devnets_registry, admin_client, settings):
    """What an order brought stays in the vault for it (its deposit to the provider, or its payer's refund)
    until it ends: a refill is paid from the rest. (A refill took an order's funds in a rehearsal, and the
    order's deposit and its refund both reverted.)"""
    settings.RELAY_PROVIDER = "relay"
    a, b = devnets_registry
    inventory = stock_of(a, b)
    vault = erc20(a).functions.balanceOf(settings.VAULT_ADDRESS).call()
    settling, _ = checkout(admin_client, a[1], b[1], "swap")
    fronted, _ = checkout(admin_client, a[1], b[1], "swap")
    Order.objects.filter(pk__in=[settling, fronted]).update(
        status="relay", settlement={"srcAmountReceived": "123000000"}
    )
    front = inventory_front(Order.objects.get(pk=fronted), 1_000_000)

    assert front is not None
    # A front in flight may still fail (a call that reverts), and its payer be refunded from the vault.
    assert vault_free(inventory) == vault - 246_000_000
    OutboxTx.objects.filter(pk=front.tx_id).update(status="mined")
    assert (
        vault_free(inventory) == vault - 123_000_000
    )  # the fronted order's money is free, the other's is not
    Order.objects.filter(pk=settling).update(status="executed")
    assert vault_free(inventory) == vault
    # A front that failed (a call that would revert) paid for nothing: its payer is refunded from the vault.
    OutboxTx.objects.filter(pk=front.tx_id).update(status="failed")
    Order.objects.filter(pk=fronted).update(status="refunding")
    assert vault_free(inventory) == vault - 123_000_000


# --- contract orders from inventory, through the call router (orders/router.py) ------------------------------


def _mined(tx: OutboxTx) -> OutboxTx:
    from chains.outbox import outbox_send
    from tests.chains.test_outbox import until_finished

    outbox_send(tx.pk)
    return until_finished(tx)


@pytest.fixture
def router(devnets_registry):
    """The call router on Devnet B (deployed once per devnet, as `manage.py relay deploy-router` does), and the
    solver's standing allowance of dUSDC for it."""
    _, b = devnets_registry
    if router_state(31338) != "ours":
        _mined(router_deploy_submit(31338))
    assert router_state(31338) == "ours"
    _mined(solver_allowance(31338, erc20(b).address))
    return router_address()


@pytest.mark.parametrize("order_type", ["mint_nft", "join_tournament", "custom_exact_in"])
def test_a_contract_order_the_inventory_covers_is_called_from_it_through_the_router(
    standin, devnets_registry, admin_client, router, order_type
):
    """The solver makes the call as soon as the deposit is confirmed, beside the sweep, in one transaction
    through the router (take the price, allow the contract, call, withdraw the allowance): the provider is
    paid nothing and every unit is where it should be."""
    a, b = devnets_registry
    stock_of(a, b)
    recipient = random_address()
    order_id, _ = checkout(admin_client, a[1], b[1], order_type, recipient=recipient)
    contracts = b[1]["contracts"]
    target = Order.objects.get(pk=order_id).payload.get("contractAddress") or contracts["Tournament"]
    who = {
        "payer": (erc20(a), w3_of(a).eth.accounts[PAYER]),
        "vault": (erc20(a), settings.VAULT_ADDRESS),
        "solver": (erc20(b), settings.SOLVER_ADDRESS),
        "router": (erc20(b), router),
        "contract": (erc20(b), target),
    }
    before = {name: token.functions.balanceOf(address).call() for name, (token, address) in who.items()}
    pay(order_id, a)

    order = drive(
        order_id, also=lambda o: InventoryFront.objects.filter(order=o, swept_at__isnull=False).exists()
    )

    assert order.status == "executed", order.error_details
    front = InventoryFront.objects.get(order=order)
    price = int(order.settlement["dstAmount"])
    assert (front.tx.to.lower(), front.tx.signer, int(front.amount)) == (router.lower(), "solver", price)
    assert (order.execute_tx["chainId"], order.execute_tx["txHash"]) == (31338, front.tx.tx_hash)
    assert "the solver delivers beside the sweep" in order.status_changes.values_list("reason", flat=True)
    assert standin.deposited() == [] and not standin.fills()  # the provider moved nothing
    if order_type == "mint_nft":
        nft = w3_of(b).eth.contract(address=contracts["PricedNFT721"], abi=artifact("PricedNFT721")["abi"])
        assert nft.functions.balanceOf(recipient).call() == 1
    elif order_type == "join_tournament":
        tournament = w3_of(b).eth.contract(address=contracts["Tournament"], abi=artifact("Tournament")["abi"])
        assert tournament.functions.joined(recipient).call() is True
    after = {name: token.functions.balanceOf(address).call() for name, (token, address) in who.items()}
    paid = int(order.src_amount)
    assert {name: after[name] - before[name] for name in who} == {
        "payer": -paid,
        "vault": paid,
        "solver": -price,
        "router": 0,
        "contract": price,
    }
    allowed = erc20(b).functions.allowance(router, target).call()
    assert allowed == 0  # the router withdrew the allowance it gave for the call


def test_a_call_from_inventory_that_would_revert_is_never_sent_and_the_payer_is_refunded(
    standin, devnets_registry, admin_client, router
):
    a, b = devnets_registry
    stock_of(a, b)
    reverts = b[1]["contracts"]["AlwaysReverts"]
    order_id, _ = checkout(
        admin_client, a[1], b[1], "custom", to=reverts, spenderAddress=reverts, data="0x12345678"
    )
    payer = w3_of(a).eth.accounts[PAYER]
    payer_before = erc20(a).functions.balanceOf(payer).call()
    solver_before = erc20(b).functions.balanceOf(settings.SOLVER_ADDRESS).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",), timeout=120)

    assert order.error_details.startswith("EXECUTION_REVERTED: would revert"), order.error_details
    front = InventoryFront.objects.get(order=order)
    assert (front.tx.status, front.tx.tx_hash) == ("failed", "")  # estimated, refused, never signed
    assert erc20(a).functions.balanceOf(payer).call() == payer_before
    assert erc20(b).functions.balanceOf(settings.SOLVER_ADDRESS).call() == solver_before
    assert stock(front.inventory, solver_before).outstanding == 0  # a failed front holds nothing


def test_a_contract_order_is_not_called_from_inventory_until_the_solver_has_allowed_the_router(
    devnets_registry, admin_client
):
    """The first contract order asks for the solver's standing allowance for the router and is not fronted (it
    would take the provider); once the allowance is mined, the order is called from the inventory."""
    a, b = devnets_registry
    if router_state(31338) != "ours":
        _mined(router_deploy_submit(31338))
    stock_of(a, b)
    order_id, _ = checkout(admin_client, a[1], b[1], "fund_tournament")
    order = Order.objects.get(pk=order_id)

    assert inventory_front(order, 1_000_000) is None
    asked = OutboxTx.objects.get(key__startswith="inventory:router-allowance:31338:")
    assert (asked.signer, asked.to.lower(), asked.status) == ("solver", erc20(b).address.lower(), "queued")
    assert inventory_front(order, 1_000_000) is None  # asked once, still not mined
    assert OutboxTx.objects.filter(key__startswith="inventory:router-allowance:").count() == 1

    _mined(asked)
    front = inventory_front(order, 1_000_000)

    assert front is not None and front.tx.to.lower() == router_address().lower()


def test_deploy_router_is_idempotent_asks_the_solvers_allowances_and_names_what_it_cannot_do(
    devnets_registry, router
):
    a, b = devnets_registry
    OutboxTx.objects.filter(key__startswith="inventory:router-allowance:").delete()  # as on a fresh service
    stock_of(a, b)
    out = io.StringIO()

    call_command("relay", "deploy-router", "31338", stdout=out)
    call_command("relay", "deploy-router", "31338", stdout=io.StringIO())

    assert f"the call router is at {router} (already deployed)" in out.getvalue()
    asked = OutboxTx.objects.get(key__startswith="inventory:router-allowance:31338:")
    assert (asked.signer, asked.to.lower()) == ("solver", erc20(b).address.lower())
    assert "(the signing worker sends it)" in out.getvalue()
    with pytest.raises(CommandError, match="chain 999 is not in the registry"):
        call_command("relay", "deploy-router", "999")


def test_the_router_refuses_a_call_that_would_draw_on_the_solvers_allowance_for_it(
    standin, devnets_registry, admin_client, router
):
    """A custom call aimed at the token itself (`transferFrom(solver, attacker, ...)`, made by the router,
    would spend the solver's standing allowance): the router refuses it on chain, and the service never
    fronts such an order (it takes the provider, whose multicaller holds no one's allowance)."""
    a, b = devnets_registry
    stock_of(a, b)
    token, w3 = erc20(b), w3_of(b)
    attacker = random_address()
    steal = token.encode_abi("transferFrom", [settings.SOLVER_ADDRESS, attacker, 10**6])
    contract = w3.eth.contract(address=router, abi=artifact("CallRouter")["abi"])
    refused = "0x" + Web3.keccak(text="TargetHoldsCallerAllowance(address)")[:4].hex()
    with pytest.raises(ContractCustomError) as raised:
        contract.functions.call(token.address, 0, token.address, token.address, steal).call(
            {"from": settings.SOLVER_ADDRESS}
        )
    assert str(raised.value.data).startswith(refused)
    order_id, _ = checkout(
        admin_client, a[1], b[1], "custom", to=token.address, spenderAddress=token.address, data=steal
    )
    order = Order.objects.get(pk=order_id)

    assert inventory_front(order, 1_000_000) is None
    assert token.functions.balanceOf(attacker).call() == 0


@pytest.mark.django_db(transaction=True)
def test_a_refill_reads_the_nodes_before_it_takes_the_stocks_lock(standin, devnets_registry, admin_client):
    """A burst's fronts take the stock's lock one after another; a refill that held it while a node answered
    made them wait (3.5 s in a rehearsal, while one endpoint of the refill chain was down)."""
    import threading

    from django.db import connection

    from orders import inventory as module

    if not connection.features.has_select_for_update:
        pytest.skip("the database locks no rows (SQLite): one process writes at a time")
    a, b = devnets_registry
    inventory = stock_of(a, b, low_mark=BIG, target=BIG)  # below its low mark: a refill is asked for
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    reading, answer = threading.Event(), threading.Event()

    def slow_node(inventory):  # the vault's balance on the refill chain, from a node that takes its time
        reading.set()
        answer.wait(20)
        return 10**12

    def refill():
        try:
            module.refill_step(inventory)
        finally:
            connection.close()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "_vault_balance", slow_node)
        refilling = threading.Thread(target=refill)
        refilling.start()
        assert reading.wait(10)
        try:
            front = inventory_front(Order.objects.get(pk=order_id), 1_000_000)
            assert front is not None
            assert refilling.is_alive()  # the front did not wait for the refill's node
        finally:
            answer.set()
            refilling.join()
    assert InventoryRefill.objects.filter(inventory=inventory).count() == 1
