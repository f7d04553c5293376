"""What the checkout tells the ledger of its payments (ledger.balance): a session's payment completed, in the
token and on the chain the merchant is paid in, and each refund to a session's payer (a failed payment's
deposit, the part beyond the price, a late payment). The ledger writes the merchant's balance rows from them.
"""

from __future__ import annotations

from typing import Any

from checkout.models import Transaction
from ledger.balance import PaymentRefunded, PaymentSettled, postings_of
from orders.models import Order, RefundTx
from orders.selectors import payment_seen


def _deposits(order: Order) -> list[tuple[str, int, str]]:
    rows = order.deposit_txs.filter(counted=True).order_by("pk").values_list("chain", "tx_hash")
    if not rows:  # executed on first sight of the payment, before its deposit was counted
        _, tx_hash = payment_seen(order)
        return [("deposit", order.src_chain, tx_hash)] if tx_hash else []
    return [("deposit", chain, tx_hash) for chain, tx_hash in rows]


def _refs(row: Transaction) -> dict[str, Any]:
    return {
        "order_id": row.order_id,
        "payment_link_id": row.payment_link_id or "",
        "session_id": row.session_id or "",
        "transaction_id": row.id,
    }


def payment_settled(order: Order, row: Transaction) -> PaymentSettled:
    """The session's payment, settled: `gross` what it bought on the merchant's chain, `net` what arrived."""
    settled = order.settlement or {}
    net = int(settled.get("actualDstAmount") or settled.get("dstAmount") or 0)
    gross = max(int(settled.get("quotedDstAmount") or 0), net)
    deliveries = [("delivery", relay.chain, relay.tx_hash) for relay in order.relay_txs.all()]
    if order.execute_tx:
        deliveries.append(("execution", order.dst_chain, str(order.execute_tx.get("txHash") or "")))
    return PaymentSettled(
        organization_id=row.organization_id,
        payment_id=row.id,
        chain_id=row.chain_id,
        token_address=row.token_address,
        gross=gross,
        net=net,
        tx_hashes=[*_deposits(order), *deliveries],
        posting_keys=postings_of(order_id=order.pk),
        description=f"payment {row.id}",
        refs=_refs(row),
    )


def payment_refunded(order: Order, row: Transaction, refund: RefundTx) -> PaymentRefunded:
    """One refund to the payer of a session's order."""
    return PaymentRefunded(
        organization_id=row.organization_id,
        payment_id=row.id,
        refund_id=str(refund.pk),
        chain_id=refund.chain,
        token_address=(refund.deposit.token_address if refund.deposit else "") or order.src_token_address,
        amount=int(refund.amount),
        tx_hash=refund.tx_hash,
        posting_keys=postings_of(order_id=order.pk),
        description=f"returned to the payer of {row.id}",
        refs=_refs(row),
    )
