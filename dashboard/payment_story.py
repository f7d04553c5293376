"""A payment as the merchant reads it: what was received or went back, and the order's timeline in words and
token amounts (never the service's state names or base units; those stay in the admin)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from checkout.models import Transaction
from checkout.receipts import explorer_link, short_hash
from dashboard.amounts import chain_name
from dashboard.amounts import token_amount as amount
from orders.models import Order, OrderStatusChange

# Why an order failed, for the merchant, by the first word of its error.
FAILURES = {
    "SLIPPAGE": "The exchange rate moved beyond the slippage allowed while the payment arrived",
    "NO_ROUTE": "No route could deliver this payment in your token",
    "RELAY_UNAVAILABLE": "The exchange provider could not be reached",
    "RELAY_FAILED": "The exchange provider did not deliver",
    "SWEEP_FAILED": "The payment could not be collected from its deposit address",
    "EXECUTION_INVALID": "The contract call could not be made",
    "EXECUTION_REVERTED": "The contract call failed",
    "REFUNDED_BY_STAFF": "Refunded by the payment service's staff",
}
# Why a checkout expired (the reason its session's expiry gave).
EXPIRIES = {
    "timeout": "The checkout's time ran out",
    "expired_by_merchant": "You expired the checkout",
    "expired_by_request": "The checkout was expired by a request",
    "payment_link_deleted": "Its payment link was deleted",
    "order_expired": "Not paid in time",
}


@dataclass(frozen=True)
class Step:
    title: str
    detail: str
    at: datetime
    raw: str  # the service's own words, for a tooltip
    url: str | None = None
    link_text: str = ""


def money(txn: Transaction, order: Order | None) -> list[tuple[str, str]]:
    """The payment's money rows: received (or expected, or nothing), and what the payer sent and got back."""
    received = f"{amount(txn.chain_id, txn.token_address, txn.amount)} on {chain_name(txn.chain_id)}"
    refunded = 0
    paid = 0
    if order is not None:
        refunded = sum(int(r.amount) for r in order.refund_txs.filter(status="success"))
        paid = sum(int(d.amount) for d in order.deposit_txs.filter(counted=True))
    src = (txn.source_chain_id, txn.source_token_address)
    rows: list[tuple[str, str]] = []
    if txn.status == Transaction.Status.COMPLETED:
        rows.append(("Received", received))
    elif txn.status == Transaction.Status.FAILED:
        rows.append(("Received", "Nothing: the payment did not go through"))
    else:
        rows.append(("Expected", received))
    if paid:
        rows.append(("Payer sent", f"{amount(*src, paid)} on {chain_name(txn.source_chain_id)}"))
    if refunded:
        rows.append(
            ("Refunded to the payer", f"{amount(*src, refunded)} on {chain_name(txn.source_chain_id)}")
        )
    return rows


def _received(order: Order) -> str:
    paid = sum(int(d.amount) for d in order.deposit_txs.filter(counted=True))
    return amount(order.src_chain, order.src_token_address, paid)


def delivered(order: Order) -> str:
    """What the order delivered, in its destination token ("" before it is known)."""
    return _delivered(order)


def _delivered(order: Order) -> str:
    settlement = order.settlement or {}
    units = settlement.get("actualDstAmount") or settlement.get("dstAmount")
    return amount(order.dst_chain, order.dst_token_address, units) if units is not None else ""


def _step(order: Order, change: OrderStatusChange) -> Step:
    """One status change in words."""
    to, reason = change.to_status, change.reason or ""
    src, dst = chain_name(order.src_chain), chain_name(order.dst_chain)
    base = {"at": change.created_at, "raw": reason}
    if to == Order.Status.QUOTING_AFTER_DEPOSIT:
        return Step("Payment received", f"{_received(order)} from the payer on {src}", **base)
    if to == Order.Status.SENDING_TOKEN_FROM_VAULT:
        return Step("Exchange priced", "The payment is collected from its deposit address", **base)
    if to == Order.Status.RELAY:
        delivered = _delivered(order)
        return Step("Delivering to you", f"{delivered} on {dst}" if delivered else f"On {dst}", **base)
    if to == Order.Status.EXECUTING:
        return Step("Calling the contract", f"On {dst}", **base)
    if to == Order.Status.EXECUTED:
        delivered = _delivered(order)
        execute = order.execute_tx or {}
        tx = execute.get("txHash") or ""
        return Step(
            "Delivered",
            f"{delivered} on {dst}" if delivered else f"On {dst}",
            url=explorer_link(order.dst_chain, tx) if tx else None,
            link_text=short_hash(tx),
            **base,
        )
    if to == Order.Status.FAILURE:
        code = reason.split(":", 1)[0].strip()
        return Step("Failed", FAILURES.get(code, "The payment could not be completed"), **base)
    if to == Order.Status.EXPIRED:
        found = re.search(r"\(([a-z_]+)\)$", reason)
        if reason == "not paid in time":
            detail = "Not paid in time"
        elif reason == "the payer chose another token":
            detail = "The payer chose another token to pay with"
        else:
            detail = EXPIRIES.get(found.group(1) if found else "", "The checkout expired")
        return Step("Expired", detail, **base)
    if to == Order.Status.REFUNDING:
        return Step("Sending the payment back", f"{_received(order)} goes back to the payer on {src}", **base)
    if to == Order.Status.REFUNDED:
        tx = next(iter(re.findall(r"0x[0-9a-fA-F]{64}", reason)), "")
        return Step(
            "Refunded",
            f"Back with the payer on {src}",
            url=explorer_link(order.src_chain, tx) if tx else None,
            link_text=short_hash(tx),
            **base,
        )
    return Step(to.replace("_", " ").capitalize(), "", **base)


def timeline(order: Order | None) -> list[Step]:
    if order is None:
        return []
    changes = OrderStatusChange.objects.filter(order_id=order.pk).order_by("created_at", "id")
    return [_step(order, change) for change in changes]
