"""A refund delivered to another chain or token: an order of the orders app does it, as it does every payer's.

Once the refund is funded (its deposit swept into the vault, or taken from the refund balance), it is quoted
and an order is made for it: a `swap` of exactly the refund's amount of the merchant's token into the
destination token on the destination chain, to the payer, owned by the refunds (`OrderOwner.REFUND`), its
refund address the vault. The vault pays the order's deposit address (`refund:<id>:order`), and from there the
order is settled as any other: counted when confirmed, swept, delivered from the solver's inventory or through
the relay provider. Its `Executed` makes the refund `succeeded`, with what the payer received; its `Refunded`
(the order failed, the amount back in the vault) makes the refund `failed` and credits the refund balance.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from chains.keys import OwnerKind, Signer, Step, outbox_key
from chains.models import OutboxTx
from chains.outbox import outbox_transfer
from orders import events
from orders.events import OrderOwner
from orders.inputs import OrderRequest
from orders.models import Order
from orders.services import order_create
from refunds.models import Refund
from refunds.routes import ORDER_TYPE, quote_least
from refunds.services import refund_delivered, refund_delivery_failed

OWNER = OrderOwner.REFUND


def crosses(refund: Refund) -> bool:
    """Whether the payer receives it on another chain or in another token than the merchant funds it in."""
    return (refund.destination_chain_id, refund.destination_token_address.lower()) != (
        refund.chain_id,
        refund.token_address.lower(),
    )


def refund_order(refund: Refund) -> Order:
    """The order that delivers the refund, made once (quoted now, outside the refund's lock)."""
    if refund.order_id is not None:
        return Order.objects.get(pk=refund.order_id)
    least = quote_least(
        chain_id=refund.chain_id,
        token=refund.token_address,
        amount=int(refund.amount),
        dst_chain=refund.destination_chain_id,
        dst_token=refund.destination_token_address,
        to=refund.destination_address,
    )
    with transaction.atomic():
        locked = Refund.objects.select_for_update().get(pk=refund.pk)
        if locked.order_id is not None:  # another settlement made it meanwhile
            return Order.objects.get(pk=locked.order_id)
        order = order_create(
            organization=locked.organization,
            request=OrderRequest(
                type=ORDER_TYPE,
                src_chain=locked.chain_id,
                dst_chain=locked.destination_chain_id,
                src_token_address=locked.token_address,
                dst_token_address=locked.destination_token_address,
                src_amount=int(locked.amount),
                recipient_address=locked.destination_address,
                payload={"expectedDstAmount": str(least)},
                refund_address=settings.VAULT_ADDRESS,
                metadata={"refund": locked.id},
            ),
            payer_ip="",
            owner=OWNER,
            fixed_price=True,
        )
        Refund.objects.filter(pk=locked.pk).update(order_id=order.pk, destination_amount=least)
    refund.order_id, refund.destination_amount = order.pk, least
    return order


def order_funding(refund: Refund, order: Order) -> OutboxTx:
    """The vault pays the refund's order what it delivers: exactly the refund's amount, once."""
    return outbox_transfer(
        key=outbox_key(OwnerKind.REFUND, refund.id, Step.ORDER),
        chain_id=refund.chain_id,
        signer=Signer.VAULT,
        token=refund.token_address,
        to=order.global_address,
        amount=int(refund.amount),
    )


def _refund_of(order: Order) -> Refund | None:
    return Refund.objects.filter(order_id=order.pk).first()


@events.on(events.Executed, owner=OWNER)
def refund_order_executed(event: events.Executed) -> None:
    order = event.order
    refund = _refund_of(order)
    if refund is None:
        return
    delivered = int((order.settlement or {}).get("dstAmount") or refund.destination_amount or 0)
    tx_hash = (order.execute_tx or {}).get("txHash") or ""
    if not tx_hash:
        relay = order.relay_txs.filter(chain=order.dst_chain).order_by("-created_at").first()
        tx_hash = relay.tx_hash if relay is not None else ""
    refund_delivered(refund.id, chain_id=order.dst_chain, tx_hash=tx_hash, delivered=delivered)


@events.on(events.Refunded, events.RefundPaid, owner=OWNER)
def refund_order_refunded(event: events.Refunded | events.RefundPaid) -> None:
    """What the vault paid the order is back in the vault: the order failed (`Refunded`), or it had expired
    before the vault's payment landed and sent that back as a late payment (`RefundPaid`). The refund failed;
    its amount goes to the refund balance (once: a refund no longer pending is left alone)."""
    refund = _refund_of(event.order)
    if refund is not None:
        reason = getattr(event, "error", "") or "its order sent the payment back"
        refund_delivery_failed(refund.id, reason=reason)
