"""The checkout's balance transactions (ledger.models.BalanceTransaction), written in the order's transaction:

- `payment` when a session's payment completed, in the token and on the chain the merchant is paid in:
  `gross` is what the payment bought there, `fee` the service's part of it, `net` what reached the
  merchant's address (the transaction's amount);
- `refund` for each refund to a session's payer (a failed payment's deposit, the part beyond the price, a
  late payment): `gross` is what went back, in the payer's token and chain; `net` is 0, since it never
  reached the merchant.
"""

from __future__ import annotations

from checkout.models import Transaction
from ledger.balance import Type, balance_record, postings_of
from orders.models import Order, RefundTx


def _deposits(order: Order) -> list[tuple[str, int, str]]:
    rows = order.deposit_txs.filter(counted=True).order_by("pk").values_list("chain", "tx_hash")
    return [("deposit", chain, tx_hash) for chain, tx_hash in rows]


def _refs(row: Transaction) -> dict:
    return {
        "order_id": row.order_id,
        "payment_link_id": row.payment_link_id or "",
        "session_id": row.session_id or "",
        "transaction_id": row.id,
    }


def payment_recorded(order: Order, row: Transaction) -> None:
    settled = order.settlement or {}
    net = int(settled.get("actualDstAmount") or settled.get("dstAmount") or 0)
    gross = max(int(settled.get("quotedDstAmount") or 0), net)
    deliveries = [("delivery", relay.chain, relay.tx_hash) for relay in order.relay_txs.all()]
    if order.execute_tx:
        deliveries.append(("execution", order.dst_chain, str(order.execute_tx.get("txHash") or "")))
    balance_record(
        key=f"payment:{row.id}",
        organization_id=row.organization_id,
        type=Type.PAYMENT,
        chain_id=row.chain_id,
        token_address=row.token_address,
        gross=gross,
        fee=gross - net,
        net=net,
        source_id=row.id,
        tx_hashes=[*_deposits(order), *deliveries],
        posting_keys=postings_of(order_id=order.pk),
        description=f"payment {row.id}",
        **_refs(row),
    )


def refund_recorded(order: Order, row: Transaction, refund: RefundTx) -> None:
    """One refund to the payer of a session's order (a failed payment's deposit, an extra, a late one)."""
    balance_record(
        key=f"refund:{refund.pk}",
        organization_id=row.organization_id,
        type=Type.REFUND,
        sign=-1,
        chain_id=refund.chain,
        token_address=(refund.deposit.token_address if refund.deposit else "") or order.src_token_address,
        gross=int(refund.amount),
        net=0,
        source_id=row.id,
        tx_hashes=[("refund", refund.chain, refund.tx_hash)],
        posting_keys=postings_of(order_id=order.pk),
        description=f"returned to the payer of {row.id}",
        **_refs(row),
    )
