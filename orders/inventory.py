"""Delivery from inventory ("fast finish"), and its refills through the relay provider.

The solver holds a stock of a token on a chain (an `Inventory` row: staff set its marks and limits with
`manage.py inventory set` or the admin). A swap order paying out that token on that chain is delivered from
the stock as soon as its deposit is confirmed, beside the sweep, as the devnet solver does: the confirmed
deposit waits at an address only the service can sweep. A contract order spending that token has its call
made from the stock the same way, in one transaction through the call router (orders/router.py) where the
router is deployed on the chain; a call that would revert is never sent, and its payer is refunded.
Fronting is refused, and the order takes the relay provider, when the order is larger than `max_order`, when
what is fronted and not yet swept would pass `max_outstanding` (what a reorg could take), or when the stock,
less what is on its way out, does not cover it.
Every fronted order is an `InventoryFront` (its delivery `order:<id>:relay` from the solver through the
outbox); it stops being outstanding when its sweep is mined, and a sweep that comes up short opens an incident
as for any order.

Refills: when the stock (the solver's balance on chain, less its deliveries in flight) is below `low_mark`, the
vault asks the relay provider for `target - stock`, from `refill_chain_id`/`refill_token`, to the solver, and
pays the quote's deposit through the outbox (`inventory:<id>:refill:<refill>:<step>`, the vault's standing
allowance for the pinned depository as for orders). One refill at a time per inventory; a fill is counted
once the chain shows it `confirmations` deep. The ledger has every unit: the deposit and deliveries are the
outbox's postings, the provider's fill into the solver `inventory-fill:<chain>:<tx>` and a refund into the
vault `relay-refund:<chain>:<tx>` (orders/accounting.py), so `reconcile` balances the solver and the vault.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from eth_typing import BlockIdentifier
from eth_utils import to_checksum_address

from chains.artifacts import ERC20, encode_call
from chains.client import web3_for
from chains.evm import ZERO_ADDRESS
from chains.handlers import check_section, outbox_handler
from chains.keys import OwnerKind, Signer, Step, outbox_key, owner_of
from chains.models import OutboxTx
from chains.outbox import outbox_submit, outbox_transfer, rpc_batch
from chains.readers import RpcChainReader, confirmed_receipt
from chains.registry import chain_get
from chains.states import IN_FLIGHT
from core.tasks import Later
from ledger.models import Account
from orders import accounting
from orders.inputs import EXACT_INPUT
from orders.models import Inventory, InventoryFront, InventoryRefill, Order
from orders.providers import ProviderUnavailable, QuoteRejected
from orders.relays import RelayProvider, pay_steps, quote_steps
from orders.router import routed_call, router_address, router_state, solver_allowance
from orders.states import REFILL
from orders.types import SWAP_TYPES, ExecutionInvalid
from orders.types import of as type_of

REFILL_INVENTORIES = Later("orders.tasks.refill_inventories")

logger = logging.getLogger(__name__)

Refill = InventoryRefill.Status


@dataclass(frozen=True)
class Stock:
    """Where one inventory stands: what the solver holds on chain, what is on its way out of it (deliveries in
    flight), what is fronted and not yet swept, and what is left to front."""

    balance: int
    committed: int
    outstanding: int

    @property
    def available(self) -> int:
        return self.balance - self.committed


def solver_balance(inventory: Inventory, *, at_block: int | None = None) -> int | None:
    """What the solver holds of the inventory's token on its chain, now (or at `at_block`); None when no node
    answers."""
    chain, solver = chain_get(inventory.chain_id), settings.SOLVER_ADDRESS
    if chain is None or not solver:
        return None
    block: BlockIdentifier = "latest" if at_block is None else at_block
    try:
        if inventory.token == ZERO_ADDRESS:
            return int(web3_for(chain).eth.get_balance(to_checksum_address(solver), block))
        return RpcChainReader().balance_of(
            chain_id=inventory.chain_id, token=inventory.token, holder=solver, block=block
        )
    except Exception as exc:  # no node answered: nothing is fronted or refilled until one does
        logger.info(
            "Inventory %s: the solver's balance is not readable: %s", inventory.pk, exc.__class__.__name__
        )
        return None


def stock(inventory: Inventory, balance: int, *, read_at: int | None = None) -> Stock:
    """The stock, from the solver's balance read now (or at block `read_at`: a front mined after that block is
    still on its way out as far as that balance knows)."""
    fronts = InventoryFront.objects.filter(inventory=inventory)
    going = Q(tx__status__in=IN_FLIGHT)
    if read_at is not None:
        going |= Q(tx__status=OutboxTx.Status.MINED, tx__block_number__gt=read_at)
    committed = sum(int(a) for a in fronts.filter(going).values_list("amount", flat=True))
    outstanding = sum(
        int(a)
        for a in fronts.filter(swept_at__isnull=True)
        .exclude(tx__status=OutboxTx.Status.FAILED)
        .values_list("amount", flat=True)
    )
    return Stock(balance=balance, committed=committed, outstanding=outstanding)


InventoryRead = tuple[int, int]  # (the destination chain's head, the solver's balance there), read together


def inventory_front(
    order: Order,
    dst_amount: int,
    *,
    read: InventoryRead | None = None,
    seen: dict | None = None,
) -> InventoryFront | None:
    """Deliver a swap order, or make a contract order's call, from the solver's inventory now, if the
    inventory covers it within its limits; the front (asked for once per order), or None: the order takes the
    relay provider. `read`: the inventory's head and balance read already (orders.fronting reads them once per
    scan); `seen`: the payment seen on first sight that the front is made against (orders.fronting)."""
    existing = InventoryFront.objects.filter(order=order).select_related("tx").first()
    if existing is not None:
        return existing
    candidate = Inventory.objects.filter(
        chain_id=order.dst_chain, token=order.dst_token_address.lower(), enabled=True
    ).first()
    if candidate is None or dst_amount <= 0 or dst_amount > int(candidate.max_order):
        return None
    call = None
    if order.type not in SWAP_TYPES:
        call = _routed(order, dst_amount)
        if call is None:
            return None
    # The solver's balance is read before the lock, with the head: fronts committed meanwhile, and those mined
    # after that head, are counted under the lock as on their way out. So a burst's fronts hold the lock one
    # after another for a few queries each, not for a node's answer each.
    read = read or head_and_balance(candidate)
    if read is None:
        return None
    read_at, balance = read
    with transaction.atomic():
        inventory = Inventory.objects.select_for_update().get(
            pk=candidate.pk
        )  # one front at a time per stock
        existing = InventoryFront.objects.filter(order=order).select_related("tx").first()
        if existing is not None:
            return existing
        now = stock(inventory, balance, read_at=read_at)
        if now.available < dst_amount or now.outstanding + dst_amount > int(inventory.max_outstanding):
            return None
        if call is None:
            tx = outbox_transfer(
                key=outbox_key(OwnerKind.ORDER, order.pk, Step.RELAY),
                chain_id=inventory.chain_id,
                signer=Signer.SOLVER,
                token=order.dst_token_address,
                to=to_checksum_address(order.recipient_address),
                amount=dst_amount,
            )
        else:  # the call, through the router: it fails (and the payer is refunded) if the call would revert
            tx = outbox_submit(
                key=outbox_key(OwnerKind.ORDER, order.pk, Step.RELAY),
                chain_id=inventory.chain_id,
                signer=Signer.SOLVER,
                to=router_address(),
                data=call[0],
                value=call[1],
            )
        return InventoryFront.objects.create(
            inventory=inventory, order=order, amount=dst_amount, tx=tx, **(seen or {})
        )


def head_and_balance(inventory: Inventory) -> InventoryRead | None:
    """(the chain's head, what the solver holds of the inventory's token), in one JSON-RPC batch; None when no
    node answers. The node answers in order, so the balance is of the head or of a later block: a front mined
    in between is then counted twice (in the balance, and as on its way out), which only fronts less."""
    chain, solver = chain_get(inventory.chain_id), settings.SOLVER_ADDRESS
    if chain is None or not solver:
        return None
    holder = to_checksum_address(solver)
    if inventory.token == ZERO_ADDRESS:
        read: tuple[str, list] = ("eth_getBalance", [holder, "latest"])
    else:
        data = encode_call(ERC20, "balanceOf", holder)
        read = ("eth_call", [{"to": to_checksum_address(inventory.token), "data": data}, "latest"])
    try:
        head, balance = rpc_batch(web3_for(chain), [("eth_blockNumber", []), read])
        return int(head["result"], 16), int(balance["result"], 16)
    # No node answered, or an answer of another shape: nothing is fronted until one does.
    except Exception as exc:
        logger.info(
            "Inventory %s: the head and balance are not readable: %s", inventory.pk, exc.__class__.__name__
        )
        return None


def _routed(order: Order, dst_amount: int) -> tuple[str, int] | None:
    """(the router's calldata, the native value) of a contract order's call made from inventory, or None when
    it takes the relay provider: the router is not on the chain, the solver's allowance for it is not mined yet
    (asked for now), the call cannot be encoded, it spends an ERC-20 without naming who takes it, or it calls a
    token the solver keeps here (which the router refuses: it would draw on the solver's allowance)."""
    if router_state(order.dst_chain) != "ours":
        return None
    token = order.dst_token_address
    spender = type_of(order).spender(order)
    native = token.lower() == ZERO_ADDRESS
    if not native and spender is None:
        return None
    try:
        target, data, value = type_of(order).call(order, dst_amount)
    except ExecutionInvalid:
        return None  # the relay path fails it before any money moves, with the reason
    if native and value != dst_amount:
        return None  # a native call that does not spend what is fronted is the provider's to make
    allowed = {
        token.lower(),
        *Inventory.objects.filter(chain_id=order.dst_chain).values_list("token", flat=True),
    }
    # The router refuses to call a token the solver allowed it (the call would draw on that allowance); the
    # provider's multicaller, which holds no one's allowance, makes such a call.
    if target.lower() in allowed:
        return None
    if not native:
        allowance = solver_allowance(order.dst_chain, token)
        if allowance is None or allowance.status != OutboxTx.Status.MINED:
            return None
    return routed_call(token=token, amount=dst_amount, spender=spender, target=target, data=data), value


def inventory_swept(order: Order) -> None:
    """The order's sweep is mined: what was fronted for it is no longer outstanding."""
    InventoryFront.objects.filter(order=order, swept_at__isnull=True).update(swept_at=timezone.now())


# --- refills ----------------------------------------------------------------------------------------------


def inventories_refill() -> int:
    """Move every enabled inventory's refill on (or ask for one below the low mark); how many moved."""
    moved = 0
    for inventory in Inventory.objects.filter(enabled=True).order_by("pk"):
        try:
            moved += refill_step(inventory)
        except Exception:  # one chain's trouble must not stop the others' refills
            logger.exception("Inventory %s: the refill step failed; the next run tries again", inventory.pk)
    _post_refunds()
    return moved


def refill_step(inventory: Inventory) -> bool:
    """Advance the inventory's open refill, or open one when the stock is below its low mark."""
    refill = inventory.refills.filter(status__in=(Refill.DEPOSITING, Refill.PENDING)).order_by("pk").first()
    if refill is None:
        refill = _open_refill(inventory)
        if refill is None:
            return False
    return _advance(refill)


def _open_refill(inventory: Inventory) -> InventoryRefill | None:
    """Ask for a refill when the stock is below its low mark: the refill (or the one another worker opened
    meanwhile), or None. The nodes are read before the stock's lock is taken, as a front does: a burst's fronts
    wait for the lock behind a few queries, never behind a node's answer (a rehearsal's waited 3.5 s)."""
    read = head_and_balance(inventory)
    vault = _vault_balance(inventory)
    if read is None or vault is None:
        return None
    read_at, balance = read
    with transaction.atomic():  # one open refill per inventory, whichever worker asks
        inventory = Inventory.objects.select_for_update().get(pk=inventory.pk)
        refill = (
            inventory.refills.filter(status__in=(Refill.DEPOSITING, Refill.PENDING)).order_by("pk").first()
        )
        if refill is not None:
            return refill
        now = stock(inventory, balance, read_at=read_at)
        amount = int(inventory.target) - now.available
        if now.available >= int(inventory.low_mark) or amount <= 0:
            return None
        free = vault - _reserved(inventory)
        if free <= 0:
            logger.warning(
                "Inventory %s is below its low mark, but the vault holds nothing free on chain %s to refill it",
                inventory.pk,
                inventory.refill_chain_id,
            )
            return None
        refill = InventoryRefill.objects.create(inventory=inventory, amount=min(amount, free))
        logger.info(
            "Inventory %s: %s below its low mark; refill %s of %s asked",
            inventory.pk,
            now.available,
            refill.pk,
            refill.amount,
        )
        return refill


OWED = (  # an order in one of these may still need what it brought: to pay the provider, or back to its payer
    Order.Status.QUOTING_AFTER_DEPOSIT,
    Order.Status.SENDING_TOKEN_FROM_VAULT,
    Order.Status.RELAY,
    Order.Status.EXECUTING,
    Order.Status.FAILURE,
    Order.Status.REFUNDING,
)


def vault_free(inventory: Inventory) -> int | None:
    """What the vault may spend on a refill on the refill chain: its balance of the refill token less what
    every order still settling there brought (it may yet pay the provider or its payer back with it). An order
    the inventory delivered is paid for: what it brought is free once swept; one whose front failed, or is still
    in flight, is not (its payer may be refunded from the vault). None when no node answers."""
    balance = _vault_balance(inventory)
    return None if balance is None else balance - _reserved(inventory)


def _vault_balance(inventory: Inventory) -> int | None:
    """The vault's balance of the refill token on the refill chain; None when no node answers."""
    chain_id, token = inventory.refill_chain_id, inventory.refill_token.lower()
    try:
        if token == ZERO_ADDRESS:
            chain = chain_get(chain_id)
            if chain is None:
                return None
            return int(web3_for(chain).eth.get_balance(to_checksum_address(settings.VAULT_ADDRESS)))
        return RpcChainReader().balance_of(chain_id=chain_id, token=token, holder=settings.VAULT_ADDRESS)
    except Exception as exc:  # no node answered: no refill until one does
        logger.info(
            "Inventory %s: the vault's balance is not readable: %s", inventory.pk, exc.__class__.__name__
        )
        return None


def _reserved(inventory: Inventory) -> int:
    """What the orders still settling on the refill chain in the refill token brought (vault_free)."""
    token = inventory.refill_token.lower()
    # Paid for once the front succeeded: one still in flight may yet fail (a call that reverts) and its payer be
    # refunded from the vault (a refill took such an order's money in a loaded rehearsal, and its refund waited).
    paid_for = Q(inventory_front__isnull=False) & Q(inventory_front__tx__status=OutboxTx.Status.MINED)
    owed = (
        Order.objects.filter(
            src_chain=inventory.refill_chain_id, src_token_address__iexact=token, status__in=OWED
        )
        .exclude(
            paid_for
        )  # a front that failed, or has not succeeded yet, paid for nothing: its payer may be owed
        .values_list("settlement", "src_amount")
    )
    return sum(int((settlement or {}).get("srcAmountReceived") or amount or 0) for settlement, amount in owed)


def _finish(refill: InventoryRefill, status: str, **fields) -> bool:
    REFILL.move(
        InventoryRefill.objects.filter(pk=refill.pk),
        from_=(Refill.DEPOSITING, Refill.PENDING),
        to=status,
        finished_at=timezone.now(),
        **fields,
    )
    return True


def _advance(refill: InventoryRefill) -> bool:
    inventory, provider = refill.inventory, RelayProvider()
    if not refill.relay:
        body = {
            "user": settings.VAULT_ADDRESS,
            "recipient": settings.SOLVER_ADDRESS,
            "originChainId": inventory.refill_chain_id,
            "destinationChainId": inventory.chain_id,
            "originCurrency": inventory.refill_token,
            "destinationCurrency": inventory.token,
            "amount": str(int(refill.amount)),
            "tradeType": EXACT_INPUT,
            "refundTo": settings.VAULT_ADDRESS,
        }
        try:
            relay = quote_steps(provider.ask_quote(body))
        except QuoteRejected as exc:
            return _finish(refill, Refill.FAILED, error=f"the relay provider refused the refill: {exc}"[:500])
        except ProviderUnavailable:
            return False
        if not relay["requestId"]:
            return _finish(refill, Refill.FAILED, error="the relay quote has no transaction to send")
        with transaction.atomic():  # the first quote kept is the one paid
            refill = InventoryRefill.objects.select_for_update().get(pk=refill.pk)
            if not refill.relay:
                refill.relay = relay
                refill.save(update_fields=["relay"])
    paid = pay_steps(refill.relay, key=outbox_key(OwnerKind.INVENTORY, inventory.pk, Step.REFILL, refill.pk))
    if isinstance(paid, str):
        return _finish(refill, Refill.FAILED, error=paid[:500])
    if paid is not None:
        return False  # a step in flight
    if refill.status == Refill.DEPOSITING:
        REFILL.move(
            InventoryRefill.objects.filter(pk=refill.pk), from_=(Refill.DEPOSITING,), to=Refill.PENDING
        )
    try:
        status = provider.ask_status(refill.relay["requestId"])
    except (ProviderUnavailable, QuoteRejected):
        return False
    state, hashes = str(status.get("status")), [h for h in status.get("txHashes") or [] if isinstance(h, str)]
    if state == "success" and hashes:
        receipt = confirmed_receipt(inventory.chain_id, hashes[0])
        if receipt is None:
            return False  # counted once the chain shows it
        if receipt["status"] != 1:
            return _finish(refill, Refill.FAILED, error=f"the provider's fill {hashes[0]} reverted")
        with transaction.atomic():
            accounting.inflow_posted(
                key=f"inventory-fill:{inventory.chain_id}:{hashes[0].lower()}",
                kind="refill",
                chain_id=inventory.chain_id,
                tx_hash=hashes[0],
                receipt=receipt,
                to=settings.SOLVER_ADDRESS,
                account=Account.Kind.SOLVER,
                owner=owner_of(OwnerKind.INVENTORY, inventory.pk),
            )
            return _finish(refill, Refill.FILLED, fill_tx=hashes[0].lower())
    if state in ("refund", "refunded", "failure"):
        refund = hashes[0].lower() if state.startswith("refund") and hashes else ""
        return _finish(refill, Refill.FAILED, refund_tx=refund, error=f"the relay ended {state}")
    return False


def _post_refunds() -> None:
    """The provider's refunds of failed refills into the vault, in the ledger once their chain shows them."""
    since = timezone.now() - timedelta(days=2)
    for refill in InventoryRefill.objects.filter(status=Refill.FAILED, finished_at__gte=since).exclude(
        refund_tx=""
    ):
        chain_id = refill.inventory.refill_chain_id
        receipt = confirmed_receipt(chain_id, refill.refund_tx)
        if receipt is not None and receipt["status"] == 1:
            accounting.inflow_posted(
                key=accounting.relay_refund_key(chain_id, refill.refund_tx),
                kind="refund",
                chain_id=chain_id,
                tx_hash=refill.refund_tx,
                receipt=receipt,
                to=settings.VAULT_ADDRESS,
                account=Account.Kind.VAULT,
                owner=owner_of(OwnerKind.INVENTORY, refill.inventory_id),
            )


@outbox_handler(OwnerKind.INVENTORY)
def refill_tx_finished(tx: OutboxTx) -> None:
    """A refill's deposit (or the allowance it waited for) was mined or failed: its refill moves on now."""
    transaction.on_commit(REFILL_INVENTORIES.delay)


# --- what staff see -----------------------------------------------------------------------------------------


@check_section(OwnerKind.INVENTORY)
def inventory_rows() -> list[list[str]]:
    """One row per inventory for `chains check`: its stock, marks, limits and open refill."""
    rows = [
        [
            "INVENTORY",
            "TOKEN",
            "SOLVER HOLDS",
            "GOING OUT",
            "FRONTED, NOT SWEPT",
            "LOW / TARGET",
            "MAX ORDER / OUTSTANDING",
            "REFILL",
            "STATUS",
        ]
    ]
    for inventory in Inventory.objects.order_by("chain_id", "token"):
        balance = solver_balance(inventory)
        now = stock(inventory, balance or 0)
        refill = inventory.refills.order_by("-pk").first()
        if not inventory.enabled:
            status = "disabled"
        elif balance is None:
            status = "unreadable"
        elif now.available < int(inventory.low_mark):
            status = "LOW"
        else:
            status = "ok"
        rows.append(
            [
                str(inventory.chain_id),
                inventory.token,
                "-" if balance is None else str(balance),
                str(now.committed),
                str(now.outstanding),
                f"{inventory.low_mark} / {inventory.target}",
                f"{inventory.max_order} / {inventory.max_outstanding}",
                f"{refill.pk} {refill.status} {refill.amount}" if refill else "-",
                status,
            ]
        )
    return rows
