"""What the relay provider's word on a request that did not fill means for its order.

The provider's status (`GET /intents/status/v3`) carries `failReason` (why the fill did not happen) and
`refundFailReason` (why its refund did not either): "N/A" when there is none, the reason or "UNKNOWN"
otherwise; `GET /requests/v3` has the same fields (null for none) and `data.failedTxHash`, the fill that was
broadcast and not included (https://docs.relay.link/references/api/api_core_concepts/execution-errors, and the
changelog of 2026-08). Three outcomes:

- `refund` with no refund failure: the deposit is back in the vault (its refund transaction on the origin
  chain, `txHashes`): the order fails with RELAY_FAILED naming the reason, and the vault refunds the payer;
- a fill broadcast and not included in the provider's window (`TRANSACTION_NOT_INCLUDED`): "it may still
  confirm afterwards", so its recorded hash (`GET /requests/v3`, `data.failedTxHash`) is read on the
  destination chain at every poll: mined and successful, the order is delivered by it; not mined
  RELAY_NOT_INCLUDED_GRACE_SECONDS after the provider gave up, as the next case;
- anything else (`failure`: no refund was made, or it needs a person, `MANUAL_REFUND_REQUIRED`): the provider
  holds the vault's deposit. A `relay_held` incident puts the order in the operator's queue (the admin's
  incidents) and holds it: the payer is not refunded from the vault while the provider may still fill or
  refund. Once staff resolve it (the provider's refund recovered, or the loss accepted), the order fails and
  the vault refunds the payer.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from chains.incidents import incident_record
from chains.keys import OwnerKind, owner_of
from chains.models import Incident
from chains.readers import receipt_on
from orders.delivery import DELIVERED, FAILED, PENDING, Delivery
from orders.models import Order, RelayTx

logger = logging.getLogger("orders.settlement")

NONE = ("", "N/A", "NONE", "NULL")
NOT_INCLUDED = "TRANSACTION_NOT_INCLUDED"

# What the order's error says of the reasons an operator meets most (the provider's own words, shortened).
MEANINGS = {
    "SOLVER_BALANCE_TOO_LOW": "the provider's solver had too little to fill",
    "SOLVER_CAPACITY_EXCEEDED": "the provider's capacity on this route was exceeded",
    "DOUBLE_SPEND": "the provider saw a second deposit for a request it had processed",
    "DEPOSITED_AMOUNT_TOO_LOW_TO_FILL": "the deposit was less than the quote needed",
    "DEPOSIT_REORGED": "the deposit left the origin chain in a reorg",
    NOT_INCLUDED: "the fill was broadcast and not included in time",
    "TRANSACTION_REVERTED": "the fill reverted on the destination chain",
    "EXECUTION_REVERTED": "the fill's call reverted on the destination chain",
    "SLIPPAGE": "the swap could not complete within its slippage",
    "TTL_EXPIRED": "the request expired before it could be filled",
    "MANUAL_REFUND_REQUIRED": "the refund needs the provider's manual intervention",
    "BLOCKED_WALLET": "an address of the request was blocked by the provider's screening",
}


def reason(value) -> str:
    """A fail reason as the provider sent it, or "" for none ("N/A", null, absent)."""
    text = str(value or "").strip().upper()
    return "" if text in NONE else text[:60]


def described(code: str) -> str:
    return f"{code}: {MEANINGS[code]}" if code in MEANINGS else code


def not_filled(provider, order: Order, status: dict, hashes: tuple) -> Delivery:
    """The delivery of a request the provider ended `refund` or `failure` (see the module's docstring)."""
    state = str(status.get("status"))
    request_id = str((order.settlement or {}).get("relay", {}).get("requestId") or "")
    fail, refund_fail = reason(status.get("failReason")), reason(status.get("refundFailReason"))
    if fail == NOT_INCLUDED:
        landed = _landed(provider, order, request_id)
        if landed is not None:
            return landed
        if not _given_up_long_ago(order):
            return Delivery(PENDING)  # it may still be included: read again on the next poll
    why = ", ".join(described(code) for code in (fail, refund_fail) if code) or "no reason given"
    error = f"the relay ended {state} ({why})"
    if state.startswith("refund") and not refund_fail:
        return Delivery(
            FAILED, tuple((order.src_chain, h, str(RelayTx.Status.REFUND)) for _, h, _ in hashes), error
        )
    subject = owner_of(OwnerKind.ORDER, order.pk)
    incident = incident_record(
        kind=Incident.Kind.RELAY_HELD,
        subject=subject,
        chain_id=order.src_chain,
        summary=(
            f"order {order.pk}: the relay provider ended request {request_id} "
            f"{state} ({why}) and holds the vault's deposit: recover it from the provider, then resolve this "
            "to refund the payer from the vault"
        ),
        details={
            "requestId": request_id,
            "status": state,
            "failReason": fail,
            "refundFailReason": refund_fail,
        },
    )
    if incident.resolved_at is None:
        return Delivery(PENDING)  # held (orders.settlement.order_held) until staff resolve it
    return Delivery(FAILED, (), error)


def _given_up_long_ago(order: Order) -> bool:
    """Whether the provider gave the order's fill up RELAY_NOT_INCLUDED_GRACE_SECONDS ago or more (the first
    time it said so is kept in the order's settlement, once)."""
    settlement = dict(order.settlement or {})
    since = settlement.get("relayGaveUpAt")
    now = timezone.now()
    if not since:
        settlement["relayGaveUpAt"] = now.isoformat()
        Order.objects.filter(pk=order.pk).update(settlement=settlement)
        order.settlement = settlement
        return settings.RELAY_NOT_INCLUDED_GRACE_SECONDS <= 0
    elapsed = (now - datetime.fromisoformat(since)).total_seconds()
    return elapsed >= settings.RELAY_NOT_INCLUDED_GRACE_SECONDS


def _landed(provider, order: Order, request_id: str) -> Delivery | None:
    """The fill the provider gave up on, if the destination chain shows it mined and successful after all."""
    try:
        found = provider.ask_request(request_id)
    except Exception as exc:  # the provider's request record is not to hand: the operator's queue decides
        logger.warning("Order %s: the relay request %s could not be read: %s", order.pk, request_id, exc)
        return None
    tx_hash = str(((found or {}).get("data") or {}).get("failedTxHash") or "")
    receipt = receipt_on(order.dst_chain, tx_hash) if tx_hash else None
    if receipt is None or receipt["status"] != 1:
        return None
    logger.warning("Order %s: the fill %s the provider gave up on was included after all", order.pk, tx_hash)
    return Delivery(DELIVERED, ((order.dst_chain, tx_hash, str(RelayTx.Status.SUCCESS)),))
