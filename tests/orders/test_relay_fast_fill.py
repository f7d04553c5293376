"""The relay provider's fast fill and its status v3 fail reasons (orders/fast_fills.py, orders/relay_outcomes.py)
on two real anvil devnets, against the provider's stand-in (tools/relay_standin.py, which cites the provider's
documentation for each behaviour): a fast fill delivers before the vault's deposit lands and only within the
exposure limits; a deposit that fails after the provider filled is the operator's loss, booked once; a refund
names its reason; a deposit the provider holds waits in the operator's queue; a fill given up on and included
after all is counted (issue 66, item 3)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.management import call_command
from eth_utils import keccak

from chains.incidents import incidents_resolve
from chains.models import Incident, OutboxTx
from chains.outbox import outbox_send
from chains.watcher import scan_chain
from ledger.models import Posting
from ledger.reconcile import reconcile_chain
from orders.models import ExposureLimit, FastFill, Order
from orders.settlement import settle_order
from tests.orders.devnet_checkout import (
    PAYER,
    checkout,
    drive,
    erc20,
    pay,
    run_until,
    service_round,
    w3_of,
)

pytestmark = pytest.mark.django_db

BIG = 10**30
PRICE = 10_000_000  # what `checkout` asks the payer for: 10 dUSDC


@pytest.fixture
def provider(standin, devnets_registry, settings):
    """The stand-in between A and B; the vault's standing allowance for its depository given beforehand (so the
    deposit is the first transaction of each order's payment); an exposure limit on dUSDC of A."""
    a, b = devnets_registry
    settings.RELAY_FAST_FILL = True
    call_command("reconcile", "--open-devnets")
    call_command("relay", "allow", "31337", erc20(a).address)
    run_until(
        lambda: (
            not OutboxTx.objects.filter(key__startswith="relay:allowance:")
            .exclude(status=OutboxTx.Status.MINED)
            .exists()
        ),
        what="the vault's standing allowance",
    )
    limit = ExposureLimit.objects.create(
        chain_id=31337,
        token=erc20(a).address.lower(),
        max_payment=PRICE,
        max_per_payer=PRICE,
        max_outstanding=2 * PRICE,
    )
    return a, b, limit


def deposit_of(order_id) -> OutboxTx | None:
    """The vault's deposit to the provider for the order (`order:<id>:relay:<n>`)."""
    return OutboxTx.objects.filter(key__startswith=f"order:{order_id}:relay:").first()


def pay_until_deposit_broadcast(order_id, a):
    """Pay the order; service rounds, a block on A each, until the vault's deposit is broadcast; then none."""
    pay(order_id, a)
    w3 = w3_of(a)
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [False])
    for _ in range(80):
        deposit = deposit_of(order_id)
        if deposit is not None and deposit.status == OutboxTx.Status.BROADCAST:
            return deposit
        w3.provider.make_request("evm_mine", [])
        service_round(order_id)
    pytest.fail("the vault's deposit was never broadcast")


def restore_mining(devnet) -> None:
    w3 = w3_of(devnet)
    w3.provider.make_request("evm_setAutomine", [True])
    w3.provider.make_request("evm_setIntervalMining", [1])


def test_a_fast_fill_delivers_before_the_vaults_deposit_lands_and_its_hold_is_released(
    provider, standin, admin_client
):
    a, b, _ = provider
    standin.confirmations = 10**6  # the provider never fills on its own: only the fast fill delivers
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    recipient = Order.objects.get(pk=order_id).recipient_address
    try:
        deposit = pay_until_deposit_broadcast(order_id, a)
        order = None
        for _ in range(40):  # A holds its blocks: the deposit is broadcast, not mined
            service_round(order_id)
            order = Order.objects.get(pk=order_id)
            if order.status == "executed":
                break
        assert order is not None and order.status == "executed", order and order.error_details
        deposit.refresh_from_db()
        assert deposit.status == OutboxTx.Status.BROADCAST  # delivered before the deposit landed
        fast = FastFill.objects.get(order_id=order_id)
        assert fast.accepted and fast.settled_at is None
        assert fast.request_id == order.settlement["relay"]["requestId"]
        assert [ask["requestId"] for ask in standin.fast_fill_asks] == [fast.request_id]  # asked once
        assert standin.holds == {fast.request_id: standin.requests[fast.request_id].amount}
        fill = order.relay_txs.get()
        assert erc20(b).functions.balanceOf(recipient).call() == int(order.settlement["dstAmount"])
        assert fill.chain == 31338
    finally:
        restore_mining(a)

    run_until(
        lambda: FastFill.objects.get(order_id=order_id).settled_at is not None,
        order_id,
        what="the deposit mined and the hold released",
    )
    standin.deposited()  # the provider indexes the deposit
    assert standin.holds == {}
    assert erc20(b).functions.balanceOf(recipient).call() == int(order.settlement["dstAmount"])  # once
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok


def test_the_fast_fill_is_asked_by_the_process_that_broadcast_the_deposit(provider, standin, admin_client):
    """Nothing settles the order between the deposit's broadcast and the ask: the send itself asks (a relay poll
    seconds later, or the deposit mined, was what asked before; once mined a fast fill buys nothing)."""
    a, b, _ = provider
    standin.confirmations = 10**6
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    pay(order_id, a)
    w3 = w3_of(a)
    w3.provider.make_request("evm_setIntervalMining", [0])
    w3.provider.make_request("evm_setAutomine", [False])
    try:
        deposit = None
        for _ in range(80):  # settle, without sending: the vault's deposit is queued, not yet out
            scan_chain(31337)
            settle_order(order_id)
            deposit = deposit_of(order_id)
            if deposit is not None:
                break
            for tx_id in OutboxTx.objects.filter(status=OutboxTx.Status.QUEUED).values_list("pk", flat=True):
                outbox_send(tx_id)
            w3.provider.make_request("evm_mine", [])
        assert deposit is not None and deposit.status == OutboxTx.Status.QUEUED
        assert not FastFill.objects.filter(order_id=order_id).exists()
        assert standin.fast_fill_asks == []

        outbox_send(deposit.pk)  # the chain worker signs and broadcasts it: nothing else runs

        deposit.refresh_from_db()
        assert deposit.status == OutboxTx.Status.BROADCAST
        fast = FastFill.objects.get(order_id=order_id)
        assert fast.accepted and fast.deposit_tx_id == deposit.pk
        assert [ask["requestId"] for ask in standin.fast_fill_asks] == [fast.request_id]
        outbox_send(deposit.pk)  # broadcast again (a retry): asked once all the same
        assert len(standin.fast_fill_asks) == 1
    finally:
        restore_mining(a)
    drive(order_id)
    assert Order.objects.get(pk=order_id).status == "executed"
    assert len(standin.fast_fill_asks) == 1
    run_until(
        lambda: FastFill.objects.get(order_id=order_id).settled_at is not None, order_id, what="the hold"
    )
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok


@pytest.mark.parametrize(
    "change",
    [{"max_payment": PRICE - 1}, {"max_outstanding": PRICE - 1}, {"enabled": False}, {"setting": False}],
    ids=["payment", "outstanding", "disabled", "setting-off"],
)
def test_outside_the_exposure_limits_the_provider_fills_once_it_has_seen_the_deposit(
    provider, standin, admin_client, settings, change
):
    a, b, limit = provider
    if "setting" in change:
        settings.RELAY_FAST_FILL = False
    else:
        ExposureLimit.objects.filter(pk=limit.pk).update(**change)
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    try:
        pay_until_deposit_broadcast(order_id, a)
        for _ in range(5):
            service_round(order_id)
        assert Order.objects.get(pk=order_id).status == "relay"  # the provider waits for the deposit
    finally:
        restore_mining(a)
    order = drive(order_id, until=("executed",))

    assert standin.fast_fill_asks == [] and not FastFill.objects.exists()
    assert order.relay_txs.get().chain == 31338


def _balance_slot(holder: str) -> str:
    """The storage slot of `holder`'s balance in an OpenZeppelin ERC20 (`_balances` is slot 0)."""
    return "0x" + keccak(bytes.fromhex(holder[2:].lower().rjust(64, "0")) + bytes(32)).hex()


def test_a_deposit_that_fails_after_the_provider_fast_filled_is_the_operators_loss_booked_once(
    provider, standin, admin_client
):
    """The vault's dUSDC is taken from it (anvil's storage) while its deposit waits for a block, so the deposit
    reverts: the recipient was paid by the provider, the order is executed, the payer is not refunded, and the
    hold is booked once as the operator's loss with an incident. The vault's balance is put back afterwards, and
    the ledger reconciles: nothing left the vault."""
    a, b, _ = provider
    standin.confirmations = 10**6
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    token, w3 = erc20(a), w3_of(a)
    payer_before = None
    try:
        deposit = pay_until_deposit_broadcast(order_id, a)
        payer_before = token.functions.balanceOf(w3.eth.accounts[PAYER]).call()
        run_until(lambda: FastFill.objects.filter(order_id=order_id, accepted=True).exists(), order_id)
        vault = settings.VAULT_ADDRESS
        held = token.functions.balanceOf(vault).call()
        slot = _balance_slot(vault)
        w3.provider.make_request("anvil_setStorageAt", [token.address, slot, "0x" + "00" * 32])
        assert token.functions.balanceOf(vault).call() == 0
        w3.provider.make_request("evm_mine", [])  # the deposit is mined, and reverts
        w3.provider.make_request("anvil_setStorageAt", [token.address, slot, "0x" + f"{held:064x}"])
    finally:
        restore_mining(a)

    order = drive(order_id, until=("executed",), timeout=60)
    for _ in range(3):
        service_round(order_id)

    deposit.refresh_from_db()
    assert deposit.status == OutboxTx.Status.FAILED
    fast = FastFill.objects.get(order_id=order_id)
    assert fast.lost_at is not None and fast.settled_at is None
    loss = Posting.objects.get(kind="fast-fill-loss")
    legs = {(e.account.kind, e.account.ref, e.side): e.amount for e in loss.entries.select_related("account")}
    assert legs == {
        ("operator", "relay-app-balance", "credit"): int(fast.amount),
        ("loss", f"fast-fill:{order_id}", "debit"): int(fast.amount),
    }
    assert (
        Incident.objects.filter(kind=Incident.Kind.FAST_FILL_LOST, subject=f"order:{order_id}").count() == 1
    )
    assert token.functions.balanceOf(w3.eth.accounts[PAYER]).call() == payer_before  # not refunded
    assert order.refund_txs.count() == 0
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok


@pytest.mark.parametrize("reason", ["SOLVER_BALANCE_TOO_LOW", "DOUBLE_SPEND"])
def test_a_request_the_provider_refunds_fails_the_order_with_its_reason_and_refunds_the_payer(
    provider, standin, admin_client, settings, reason
):
    a, b, _ = provider
    settings.RELAY_FAST_FILL = False
    standin.refuse_fills = reason
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    order = drive(order_id, until=("refunded",), timeout=120)

    assert order.error_details.startswith(f"RELAY_FAILED: the relay ended refund ({reason}: ")
    assert order.relay_txs.get().status == "refund"
    assert erc20(a).functions.balanceOf(payer).call() == before
    assert not Incident.objects.filter(kind=Incident.Kind.RELAY_HELD).exists()


def test_a_deposit_the_provider_holds_waits_in_the_operators_queue_until_staff_resolve_it(
    provider, standin, admin_client, settings
):
    """MANUAL_REFUND_REQUIRED: the provider ends the request `failure` and keeps the vault's deposit. The order
    is held (no refund from the vault while the provider may still act) with a relay_held incident; resolved, the
    order fails and the vault refunds the payer."""
    a, b, _ = provider
    settings.RELAY_FAST_FILL = False
    standin.fail_fills, standin.refund_fail_reason = True, "MANUAL_REFUND_REQUIRED"
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    payer = w3_of(a).eth.accounts[PAYER]
    before = erc20(a).functions.balanceOf(payer).call()
    pay(order_id, a)

    run_until(lambda: Incident.objects.filter(kind=Incident.Kind.RELAY_HELD).exists(), order_id, timeout=90)
    for _ in range(3):
        service_round(order_id)
    incident = Incident.objects.get(kind=Incident.Kind.RELAY_HELD)
    assert incident.subject == f"order:{order_id}" and incident.resolved_at is None
    assert incident.details["refundFailReason"] == "MANUAL_REFUND_REQUIRED"
    assert incident.details["failReason"] == "TRANSACTION_REVERTED"
    assert Order.objects.get(pk=order_id).status == "relay"
    assert erc20(a).functions.balanceOf(payer).call() == before - PRICE  # nothing refunded yet

    incidents_resolve(incident_ids=[incident.pk], actor="staff")
    order = drive(order_id, until=("refunded",), timeout=90)

    assert "MANUAL_REFUND_REQUIRED" in order.error_details
    assert erc20(a).functions.balanceOf(payer).call() == before
    assert reconcile_chain(31337).ok and reconcile_chain(31338).ok


@pytest.mark.parametrize("late", [True, False], ids=["included-after-all", "never-included"])
def test_a_fill_the_provider_gave_up_on_is_read_on_chain_before_anything_else(
    provider, standin, admin_client, settings, late
):
    """TRANSACTION_NOT_INCLUDED: "the transaction may still confirm afterwards, so the recorded hash is worth
    checking". The service reads `data.failedTxHash` from `GET /requests/v3`: mined, the order is delivered by
    it; never mined, the provider holds the deposit and the order waits in the operator's queue."""
    a, b, _ = provider
    settings.RELAY_FAST_FILL = False
    settings.RELAY_NOT_INCLUDED_GRACE_SECONDS = 3600 if late else 0
    standin.not_included, standin.late_inclusion = True, late
    order_id, _ = checkout(admin_client, a[1], b[1], "swap")
    recipient = Order.objects.get(pk=order_id).recipient_address
    pay(order_id, a)

    if late:
        order = drive(order_id, until=("executed",), timeout=90)
        request = standin.requests_v3({"id": [order.settlement["relay"]["requestId"]]})["requests"][0]
        assert request["status"] == "failure" and request["data"]["failReason"] == "TRANSACTION_NOT_INCLUDED"
        assert order.relay_txs.get().tx_hash.lower() == request["data"]["failedTxHash"].lower()
        assert erc20(b).functions.balanceOf(recipient).call() == int(order.settlement["dstAmount"])
    else:
        run_until(lambda: Incident.objects.filter(kind=Incident.Kind.RELAY_HELD).exists(), order_id)
        assert Order.objects.get(pk=order_id).status == "relay"
        assert erc20(b).functions.balanceOf(recipient).call() == 0


def test_the_standins_fast_fill_and_requests_v3_need_the_api_key(standin):
    standin.api_key = "the-key"
    assert standin.handle("POST", "/fast-fill", "", b'{"requestId": "0x01"}')[0] == 401
    assert standin.handle("GET", "/requests/v3", "id=0x01", b"")[0] == 401
    status, body = standin.handle("POST", "/fast-fill", "", b'{"requestId": "0x01"}', "the-key")
    assert (status, body["errorCode"]) == (400, "INVALID_INPUT")  # no such request
    assert standin.handle("GET", "/requests/v3", "id=0x01", b"", "the-key") == (
        200,
        {"requests": [], "continuation": None},
    )
