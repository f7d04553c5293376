"""Delivery on first sight: the solver delivers from its inventory when the payment is seen in its block,
before the deposit is confirmed, within exposure limits; the deposit is still counted, swept and booked only
at its chain's confirmations, as every deposit is.

A chain's row sets `front_confirmations` (1: the payment in its block) below its `confirmations`; the watcher
then reads the blocks above the confirmed ones and hands this module the ERC-20 transfers it sees to the
orders' deposit addresses, all of one scan together (`orders_sighted`). A payment is delivered against when:

- its chain and token have an enabled `ExposureLimit`, and the payment is at most its `max_payment`; what its
  payer address had delivered against on first sight within `payer_window_seconds` and this payment stay
  within `max_per_payer`; what is delivered against and not yet confirmed on that chain and token (the
  exposure a reorg could take), with this payment, stays within `max_outstanding`;
- the order waits for its payment, takes the relay provider with the solver's inventory on the destination,
  the payment is in the order's token and covers its price, and that price (orders.pricing) is within the
  payer's expectation;
- the inventory covers it within its own limits (orders.inventory).

Anything else waits for its confirmations, as it did before. The checks run under the limit row's lock, one
lock per chain and token per scan; the fronts are the inventory's (`inventory_front`, one balance read per
inventory per scan); once they commit, the first is signed here, and the outbox signs its sender's others
with it (`sign_batch`: one nonce reservation and one JSON-RPC batch), so a burst's deliveries make the next
block together. The scan runs where signing happens (the chain workers).

Each front on first sight is then settled by the confirmed end (`exposure_settle`, at every scan): covered
once the order's counted deposits reach the payment seen; lost when the confirmed end passed the payment's
block by REORG_GRACE_BLOCKS and nothing covers it (reorged out, dropped, or replaced by a transaction that
paid less or elsewhere). A loss is the operator's, booked once (`front-loss:<order>`: the operator's funds to
the loss account, at the delivery's amount, on its chain and token), an incident (`front_lost`, which the
IncidentOpen alert reports), and the order fails with PAYMENT_REVERSED (the delivery stands; anything it
receives later goes back to its sender). The front is one per order: nothing is delivered twice, and the
order's settlement, once its deposit is counted, finds the delivery made.
"""

from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from chains.handlers import Sighting, sighting_handler
from chains.incidents import incident_record
from chains.keys import OwnerKind, owner_id, owner_of
from chains.models import Deposit, Incident, OutboxTx
from chains.outbox import outbox_send, succeeded_in_block
from chains.signers import SignerUnavailable
from orders import accounting, lifecycle
from orders.inventory import InventoryRead, head_and_balance, inventory_front
from orders.models import ExposureLimit, Inventory, InventoryFront, Order
from orders.pricing import Slipped, judged
from orders.providers import ProviderUnavailable, QuoteRejected
from orders.relays import RelayProvider, get_relay_provider
from orders.sweeps import order_sweep

logger = logging.getLogger(__name__)

LOSS = "PAYMENT_REVERSED"
ENDED_UNEXECUTED = (Order.Status.EXPIRED, Order.Status.FAILURE, Order.Status.REFUNDING, Order.Status.REFUNDED)
QUOTES_AT_ONCE = 8  # the provider's quotes of one scan's sightings asked at once
EXPIRY_MARGIN = timedelta(seconds=30)  # an order this close to its expiry waits for its confirmations


@dataclass(frozen=True)
class Candidate:
    order: Order
    sighting: Sighting
    dst_amount: int
    quoted: int


@sighting_handler(OwnerKind.ORDER)
def orders_sighted(chain_id: int, sightings: list[Sighting], confirmed_through: int) -> None:
    """One scan's payments seen on first sight: delivered against where the limits allow, then every front on
    first sight on the chain settled by the confirmed end."""
    if sightings:
        front_on_sight(chain_id, sightings)
    exposure_settle(chain_id, confirmed_through)


def front_on_sight(chain_id: int, sightings: list[Sighting]) -> list[InventoryFront]:
    """Deliver against the sightings the limits allow (see the module's docstring); the fronts made."""
    candidates = _candidates(sightings)
    made: list[InventoryFront] = []
    by_token: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_token.setdefault(candidate.sighting.token.lower(), []).append(candidate)
    reads: dict[int, InventoryRead | None] = {}
    for token, mine in by_token.items():
        with transaction.atomic():
            limit = (
                ExposureLimit.objects.select_for_update()
                .filter(chain_id=chain_id, token=token, enabled=True)
                .first()
            )
            if limit is None:
                continue
            for candidate in mine:
                if not _within(limit, candidate.sighting):
                    continue
                front = _front(candidate, reads)
                if front is not None:
                    made.append(front)
    _send_now(made)
    return made


def _candidates(sightings: list[Sighting]) -> list[Candidate]:
    """The sightings that may be delivered against, one per order (its first), priced."""
    seen: dict[str, Sighting] = {}
    for sighting in sightings:
        seen.setdefault(sighting.owner, sighting)
    ids = {}
    for owner, sighting in seen.items():
        try:
            ids[uuid.UUID(owner_id(owner))] = sighting
        except ValueError:
            continue
    relay = get_relay_provider()
    if not isinstance(relay, RelayProvider):
        return []  # the devnet solver delivers at the confirmations: it has no inventory to limit
    fronted = set(InventoryFront.objects.filter(order_id__in=ids).values_list("order_id", flat=True))
    orders = Order.objects.filter(pk__in=set(ids) - fronted, status=Order.Status.SCANNING_DEPOSIT)
    soon = timezone.now() + EXPIRY_MARGIN
    asks = []
    for order in orders:
        sighting = ids[order.pk]
        if order.expired_at is not None and order.expired_at <= soon:
            continue  # it could expire before its delivery is in a block
        if sighting.token.lower() != order.src_token_address.lower() or relay.check(order):
            continue
        received = sighting.amount
        if lifecycle.has_fixed_price(order):
            if received < int(order.src_amount):
                continue  # short of the price: counted, and refused or refunded, once confirmed
            received = int(order.src_amount)
        asks.append((order, sighting, received))
    candidates = []
    for (order, sighting, received), price in zip(asks, _quotes(relay, asks), strict=True):
        try:
            if isinstance(price, Exception):
                raise price
            quoted, deliver = judged(order, received, price)
        except (Slipped, QuoteRejected, ProviderUnavailable):
            continue  # settled once confirmed, as any order: its failure is said then
        if deliver > 0:
            candidates.append(Candidate(order=order, sighting=sighting, dst_amount=deliver, quoted=quoted))
    return candidates


def _quotes(relay: RelayProvider, asks: list) -> list[int | Exception]:
    """The provider's price of each (order, sighting, received), asked together (HTTP only, no database): a
    burst's quotes one after another took seconds, and its deliveries missed the next block."""

    def ask(each) -> int | Exception:
        order, _, received = each
        try:
            return relay.price(order, received)
        except (QuoteRejected, ProviderUnavailable) as exc:
            return exc

    if len(asks) <= 1:
        return [ask(each) for each in asks]
    with ThreadPoolExecutor(max_workers=min(len(asks), QUOTES_AT_ONCE)) as pool:
        return list(pool.map(ask, asks))


def _within(limit: ExposureLimit, sighting: Sighting) -> bool:
    """Whether delivering against `sighting` now keeps within `limit` (held under its lock)."""
    amount = sighting.amount
    if amount > int(limit.max_payment):
        return False
    exposed = InventoryFront.objects.filter(
        payment_chain=limit.chain_id, payment_token=limit.token, payment_block__isnull=False
    )
    outstanding = _sum(exposed.filter(covered_at__isnull=True, lost_at__isnull=True))
    if outstanding + amount > int(limit.max_outstanding):
        return False
    since = timezone.now() - timedelta(seconds=limit.payer_window_seconds)
    by_payer = _sum(exposed.filter(payer__iexact=sighting.from_address, created_at__gte=since))
    return by_payer + amount <= int(limit.max_per_payer)


def _sum(fronts) -> int:
    return sum(int(a) for a in fronts.values_list("payment_amount", flat=True))


def _front(candidate: Candidate, reads: dict[int, InventoryRead | None]) -> InventoryFront | None:
    """The inventory's front of one candidate, with what was seen of its payment; None when the inventory does
    not cover it. Each inventory's head and balance are read once per scan."""
    order, sighting = candidate.order, candidate.sighting
    inventory = Inventory.objects.filter(
        chain_id=order.dst_chain, token=order.dst_token_address.lower(), enabled=True
    ).first()
    if inventory is None:
        return None
    if inventory.pk not in reads:
        reads[inventory.pk] = head_and_balance(inventory)
    seen = {
        "payment_chain": order.src_chain,
        "payment_token": sighting.token.lower(),
        "payment_tx": sighting.tx_hash.lower(),
        "payment_block": sighting.block_number,
        "payer": sighting.from_address,
        "payment_amount": sighting.amount,
        "quoted_amount": candidate.quoted,
    }
    front = inventory_front(order, candidate.dst_amount, read=reads[inventory.pk], seen=seen)
    if front is None or not front.on_sight:
        return None
    logger.info(
        "Order %s: delivered from inventory on first sight of %s in block %s",
        order.pk,
        sighting.tx_hash,
        sighting.block_number,
    )
    return front


def _send_now(fronts: list[InventoryFront]) -> None:
    """Sign and broadcast the fronts here, now: the first of each sender and chain takes the others queued
    with it (chains.outbox.send.sign_batch). Their send tasks, queued at commit, find them sent."""
    firsts: dict[tuple[int, str], int] = {}
    for front in fronts:
        firsts.setdefault((front.tx.chain_id, front.tx.sender), front.tx.pk)
    for tx_id in firsts.values():
        try:
            outbox_send(tx_id)
        except SignerUnavailable:
            return  # not a signing process: the send tasks sign them where the keys are
        except Exception:  # the send task, or the outbox's poll, signs it
            logger.exception("Outbox %s: the front on first sight was not sent here", tx_id)


def paid_on_sight(tx: OutboxTx) -> bool:
    """The solver's delivery `tx`, made on first sight of its order's payment, is in a block and succeeded: the
    order is settled now for the payment seen, priced as it was when delivered (`Paid`, then the relay step,
    which counts the delivery and executes the order), before the payment has its confirmations. Whether it
    moved (False: not such a delivery, or the order no longer waits)."""
    front = (
        InventoryFront.objects.filter(tx=tx, payment_block__isnull=False, lost_at__isnull=True)
        .select_related("order", "inventory", "tx")
        .first()
    )
    if front is None or (tx.status != OutboxTx.Status.MINED and succeeded_in_block(tx) is None):
        return False
    order = front.order
    if order.status in ENDED_UNEXECUTED:
        # It stopped waiting (its session expired) while the delivery was on its way: the payment will go back
        # to the payer as a late one, so the delivery is the operator's loss, as a payment lost is.
        front_lost(front)
        return False
    if order.status != Order.Status.SCANNING_DEPOSIT:
        return False
    received = int(front.payment_amount or 0)
    if lifecycle.has_fixed_price(order):
        received = min(received, int(order.src_amount))  # the surplus goes back once counted
    settlement = dict(order.settlement or {}) | {
        "srcAmountReceived": str(received),
        "quotedDstAmount": str(int(front.quoted_amount or front.amount)),
        "dstAmount": str(int(front.amount)),
        "feeBps": int((order.fee or {}).get("finalFeeBps") or 0),
        "relayProvider": get_relay_provider().name,
        "onSight": {"txHash": front.payment_tx, "block": front.payment_block, "from": front.payer},
    }
    return lifecycle.order_paid_on_sight(
        order=order,
        settlement=settlement,
        reason=f"{front.payment_amount} seen in {front.payment_tx} (block {front.payment_block}), delivered",
    )


def covered(front: InventoryFront, received: int) -> bool:
    """Whether the order's counted deposits (`received`) cover the payment seen: recorded on the front. An
    order executed on first sight has its deposit swept then (the settlement does it for the others)."""
    if front.covered_at is not None:
        return True
    if front.lost_at is not None or received < int(front.payment_amount or 0):
        return False
    if InventoryFront.objects.filter(pk=front.pk, covered_at__isnull=True).update(covered_at=timezone.now()):
        order = front.order
        if order.status not in (Order.Status.SCANNING_DEPOSIT, Order.Status.QUOTING_AFTER_DEPOSIT):
            order_sweep(order)
    return True


def exposure_settle(chain_id: int, confirmed_through: int) -> int:
    """Settle the fronts on first sight of payments on `chain_id` that the confirmed end reached: covered, or
    lost past REORG_GRACE_BLOCKS; how many were found lost."""
    exposed = InventoryFront.objects.filter(
        payment_chain=chain_id,
        payment_block__isnull=False,
        payment_block__lte=confirmed_through,
        covered_at__isnull=True,
        lost_at__isnull=True,
    ).select_related("order")
    lost = 0
    for front in exposed:
        counted = front.order.deposit_txs.filter(counted=True).values_list("amount", flat=True)
        if covered(front, sum(int(a) for a in counted)):
            continue
        if confirmed_through < int(front.payment_block or 0) + settings.REORG_GRACE_BLOCKS:
            continue
        if _confirmed(front) >= int(front.payment_amount or 0):
            continue  # confirmed in this scan (after a pause, many blocks at once): covered once handed over
        lost += front_lost(front)
    return lost


def _confirmed(front: InventoryFront) -> int:
    """What the chain watcher recorded as confirmed of the payment's token at the order's address, handed over
    to the order or not yet (the scan hands its deposits over after its sightings)."""
    amounts = Deposit.objects.filter(
        chain_id=int(front.payment_chain or 0),
        owner=owner_of(OwnerKind.ORDER, front.order_id),
        token__iexact=front.payment_token,
        status=Deposit.Status.CONFIRMED,
    ).values_list("amount", flat=True)
    return sum(int(a) for a in amounts)


def front_lost(front: InventoryFront) -> bool:
    """The payment a front was made against never reached its confirmations: the operator's loss, booked once,
    an incident, and the order failed (PAYMENT_REVERSED). False when another process recorded it first."""
    order = front.order
    with transaction.atomic():
        if not InventoryFront.objects.filter(
            pk=front.pk, lost_at__isnull=True, covered_at__isnull=True
        ).update(lost_at=timezone.now()):
            return False
        inventory = front.inventory
        amount = int(front.amount)
        accounting.operator_loss_posted(
            order,
            key=f"front-loss:{order.pk}",
            chain_id=inventory.chain_id,
            token=inventory.token,
            funds="solver",
            loss=f"front:{order.pk}",
            amount=amount,
            tx_hash=front.tx.tx_hash,
            memo=f"delivered on first sight of {front.payment_tx}, which never reached its confirmations",
        )
        details = {
            "payment_chain": front.payment_chain,
            "payment_tx": front.payment_tx,
            "payment_block": front.payment_block,
            "payer": front.payer,
            "payment_amount": str(front.payment_amount),
            "delivered": str(amount),
            "delivery_tx": front.tx.tx_hash,
        }
        incident_record(
            kind=Incident.Kind.FRONT_LOST,
            subject=owner_of(OwnerKind.ORDER, order.pk),
            chain_id=front.payment_chain,
            summary=(
                f"order {order.pk}: {amount} delivered on first sight of {front.payment_tx} (block "
                f"{front.payment_block}), which never reached its confirmations: the operator's loss"
            )[:500],
            details=details,
        )
        error = (
            f"{LOSS}: the payment {front.payment_tx} left chain {front.payment_chain} before its "
            f"confirmations; the delivery {front.tx.tx_hash} stands"
        )
        if not lifecycle.order_fail(order=order, error=error):
            # Executed on first sight: the delivery stands; the fee it booked was never paid.
            lifecycle.order_payment_lost(order=order, error=error)
            accounting.fee_given_back(
                order, "the payment delivered against on first sight never reached its confirmations"
            )
    logger.error("Order %s: the payment delivered against on first sight was lost", order.pk)
    return True


def exposure_outstanding() -> list[tuple[int, str, int]]:
    """(chain, token, amount) delivered against on first sight and not yet confirmed: what `/metrics` shows."""
    rows: dict[tuple[int, str], int] = {}
    open_fronts = InventoryFront.objects.filter(
        Q(payment_block__isnull=False), covered_at__isnull=True, lost_at__isnull=True
    )
    for chain, token, amount in open_fronts.values_list("payment_chain", "payment_token", "payment_amount"):
        rows[(int(chain or 0), token)] = rows.get((int(chain or 0), token), 0) + int(amount or 0)
    return [(chain, token, amount) for (chain, token), amount in sorted(rows.items())]
