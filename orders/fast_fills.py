"""The relay provider's fast fill: a provider-routed order filled on its destination chain as soon as the
vault's deposit to the provider is broadcast, not once the provider has seen it land.

The provider offers `POST /fast-fill {requestId}`, called "after you've submitted it onchain but before it
finalizes": the request is filled at once and a hold of its amount is placed against the app's balance at the
provider, released once the deposit lands; "if the deposit never lands, Relay does not release the hold. The
sponsoring app bears the loss" (https://docs.relay.link/features/fast-fill). The service asks for it:

- once per order (`FastFill`, one row per order, recorded before the provider is asked), for the vault's
  deposit transaction once it is broadcast, when RELAY_FAST_FILL is on;
- within the exposure limits of the origin chain and token (`ExposureLimit`, the same rows as delivery on first
  sight): the deposit at most `max_payment`, and the holds not yet released with it at most `max_outstanding`,
  checked under the limit row's lock. Without an enabled row nothing is fast-filled. The per-payer limit does
  not apply: the payer's payment was confirmed before the vault pays the provider; what is at stake is the
  vault's own deposit;
- an answer the service did not get (a time-out, a 5xx) counts as asked: the provider may have filled, so a
  deposit that then fails is not refunded to the payer before the provider's status says it did not fill.

Once the deposit is mined the hold is released (`settled_at`). If the deposit fails after the provider filled,
the recipient has been paid by the provider and the order is executed; the hold is the operator's loss,
booked once (`fast-fill-loss:<order>`: the operator's funds to the loss account, at the deposit's amount, on
the origin chain and token; the vault still holds that deposit, which staff may use to top the balance up), a
`fast_fill_lost` incident and the order's settlement say so.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chains.incidents import incident_record
from chains.keys import OwnerKind, owner_of
from chains.models import Incident, OutboxTx
from orders.accounting import operator_loss_posted
from orders.models import ExposureLimit, FastFill, Order
from orders.providers import ProviderUnavailable, QuoteRejected

logger = logging.getLogger("orders.settlement")


def holding():
    """The fast fills whose hold is not released: asked and not refused, their deposit neither mined nor lost."""
    return FastFill.objects.filter(refused=False, settled_at__isnull=True, lost_at__isnull=True)


def held(chain_id: int, token: str):
    """`holding` on one origin chain and token."""
    return holding().filter(chain_id=chain_id, token=token.lower())


def follow(provider, order: Order, deposit: OutboxTx | None, *, is_deposit: bool) -> FastFill | None:
    """The order's fast fill, asked for now if its deposit is broadcast and within the limits; None when none
    was asked (or the provider refused). `deposit` is the first of the quote's transactions not mined (None:
    every one is), `is_deposit` whether it is the deposit to the provider itself."""
    fast = FastFill.objects.filter(order=order).first()
    broadcast = deposit is not None and deposit.status == OutboxTx.Status.BROADCAST and bool(deposit.tx_hash)
    if fast is None and settings.RELAY_FAST_FILL and is_deposit and broadcast and deposit is not None:
        fast = _ask(provider, order, deposit)
    if fast is None or fast.refused:
        return None
    if deposit is None and fast.settled_at is None and fast.lost_at is None:
        FastFill.objects.filter(pk=fast.pk, settled_at__isnull=True).update(settled_at=timezone.now())
    return fast


def _ask(provider, order: Order, deposit: OutboxTx) -> FastFill | None:
    settlement = order.settlement or {}
    amount = int(settlement.get("srcAmountReceived") or 0)  # the most the vault deposits for the order
    token = order.src_token_address.lower()
    with transaction.atomic():
        limit = (
            ExposureLimit.objects.select_for_update()
            .filter(chain_id=deposit.chain_id, token=token, enabled=True)
            .first()
        )
        if limit is None or amount <= 0 or amount > int(limit.max_payment):
            return None
        outstanding = sum(int(a) for a in held(deposit.chain_id, token).values_list("amount", flat=True))
        if outstanding + amount > int(limit.max_outstanding):
            return None
        fast, created = FastFill.objects.get_or_create(
            order=order,
            defaults={
                "request_id": settlement["relay"]["requestId"],
                "chain_id": deposit.chain_id,
                "token": token,
                "amount": amount,
                "deposit_tx": deposit,
            },
        )
    if not created:
        return fast
    accepted = refused = False
    try:
        said = str(provider.fast_fill(fast.request_id).get("message") or "accepted")
        accepted = True
    except QuoteRejected as exc:
        said, refused = f"refused: {exc}", True
    except ProviderUnavailable as exc:  # it may have filled: counted as asked (see the module's docstring)
        said = f"no answer: {exc}"
    FastFill.objects.filter(pk=fast.pk).update(accepted=accepted, refused=refused, answer=said[:300])
    fast.accepted, fast.refused, fast.answer = accepted, refused, said[:300]
    logger.info("Order %s: fast fill of %s asked: %s", order.pk, fast.request_id, said)
    return fast


def deposit_finished(tx: OutboxTx) -> None:
    """The vault's deposit of a fast-filled order was mined (the hold is released) or failed. A failure after
    the order was executed on the provider's fill (checked on chain) is the hold lost; before that, the
    order's settlement asks the provider what it did (orders.relays)."""
    fast = FastFill.objects.filter(deposit_tx=tx).select_related("order").first()
    if fast is None:
        return
    if tx.status == OutboxTx.Status.MINED:
        FastFill.objects.filter(pk=fast.pk, settled_at__isnull=True).update(settled_at=timezone.now())
    elif tx.status == OutboxTx.Status.FAILED and fast.order.status == Order.Status.EXECUTED:
        lost(fast.order, fast, tx)


def lost(order: Order, fast: FastFill, deposit: OutboxTx) -> bool:
    """The vault's deposit failed after the provider filled: the hold is the operator's loss, booked once."""
    with transaction.atomic():
        if not FastFill.objects.filter(pk=fast.pk, lost_at__isnull=True, settled_at__isnull=True).update(
            lost_at=timezone.now()
        ):
            return False
        amount = int(fast.amount)
        operator_loss_posted(
            order,
            key=f"fast-fill-loss:{order.pk}",
            chain_id=fast.chain_id,
            token=fast.token,
            funds="relay-app-balance",
            loss=f"fast-fill:{order.pk}",
            amount=amount,
            tx_hash=deposit.tx_hash,
            memo=f"the relay provider fast-filled request {fast.request_id}; the vault's deposit failed",
        )
        incident_record(
            kind=Incident.Kind.FAST_FILL_LOST,
            subject=owner_of(OwnerKind.ORDER, order.pk),
            chain_id=fast.chain_id,
            summary=(
                f"order {order.pk}: the relay provider fast-filled request {fast.request_id} and the vault's "
                f"deposit {deposit.tx_hash} failed ({deposit.error[:120]}): the hold of {amount} at the provider "
                "is the operator's; the vault still holds the deposit"
            ),
            details={"requestId": fast.request_id, "deposit_tx": deposit.tx_hash, "amount": str(amount)},
        )
    logger.error("Order %s: fast-filled, and the vault's deposit failed: the hold is lost", order.pk)
    return True


def fast_fills_held() -> list[tuple[int, str, int]]:
    """(chain, token, amount) the provider holds against fast fills whose deposit has not landed (`/metrics`)."""
    rows: dict[tuple[int, str], int] = {}
    for chain, token, amount in holding().values_list("chain_id", "token", "amount"):
        rows[(int(chain), token)] = rows.get((int(chain), token), 0) + int(amount)
    return [(chain, token, amount) for (chain, token), amount in sorted(rows.items())]
