"""How orders and chains look on the order interface (camelCase, millisecond timestamps)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chains.registry import Chain
from orders.models import Order
from orders.selectors import OrderWithTransactions

# Personal data that only the comprehensive view may show.
PRIVATE_ONRAMP_FIELDS = ("ipAddress", "fingerprint")


def millis(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


def iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def chain_data(chain: Chain) -> dict[str, Any]:
    data: dict[str, Any] = {
        "chainId": chain.chain_id,
        "name": chain.name,
        "nativeCurrency": {"symbol": chain.native_symbol, "decimals": chain.native_decimals},
        "confirmations": chain.confirmations,
        "devnet": chain.devnet,
    }
    if chain.devnet:  # a real chain's RPC URL may carry a provider's key: never shown
        data["rpcUrl"] = chain.rpc_url
    return data


def order_data(order: Order, *, sanitized: bool = True) -> dict[str, Any]:
    onramp = order.onramp_metadata
    if onramp is not None and sanitized:
        onramp = {k: v for k, v in onramp.items() if k not in PRIVATE_ONRAMP_FIELDS}
    return {
        "id": str(order.id),
        "type": order.type,
        "status": order.status,
        "recipientAddress": order.recipient_address,
        "refundAddress": order.refund_address or None,
        "globalAddress": order.global_address,
        "srcChain": order.src_chain,
        "dstChain": order.dst_chain,
        "srcTokenAddress": order.src_token_address,
        "dstTokenAddress": order.dst_token_address,
        "srcAmount": str(order.src_amount),
        "errorDetails": order.error_details,
        "createdAt": millis(order.created_at),
        "expiredAt": millis(order.expired_at),
        "filledAt": millis(order.filled_at),
        "receivedDepositAt": millis(order.received_deposit_at),
        "creatorAddress": order.creator_address,
        "partnerId": order.partner_id,
        "clientReferenceId": order.client_reference_id,
        "checkoutSessionId": str(order.checkout_session_id) if order.checkout_session_id else None,
        "onrampMetadata": onramp,
        "oneClickBuyUrl": order.one_click_buy_url,
        "vendorBPaymentIntentId": order.vendor_b_payment_intent_id,
        "settlement": order.settlement,
        "payload": order.payload,
        "metadata": order.metadata,
        "fee": order.fee,
    }


def order_detail_data(found: OrderWithTransactions, *, sanitized: bool = True) -> dict[str, Any]:
    """`{order, depositTxs, relayTxs, executeTx, refundTxs, points}`."""
    order = found.order
    order_id = str(order.id)
    return {
        "order": order_data(order, sanitized=sanitized),
        "depositTxs": [
            {
                "orderId": order_id,
                "chain": tx.chain,
                "from": tx.from_address or None,  # none: a contract's internal payment, seen by balance
                "txHash": tx.tx_hash,
                "amount": str(tx.amount),
                "createdAt": millis(tx.created_at),
            }
            for tx in found.deposits
        ],
        "relayTxs": [
            {
                "orderId": order_id,
                "chain": tx.chain,
                "txHash": tx.tx_hash,
                "status": tx.status,
                "createdAt": millis(tx.created_at),
            }
            for tx in found.relays
        ],
        "executeTx": order.execute_tx,
        "refundTxs": [
            {
                "orderId": order_id,
                "chain": tx.chain,
                "txHash": tx.tx_hash,
                "amount": str(tx.amount),
                "status": tx.status,
                "createdAt": millis(tx.created_at),
            }
            for tx in found.refunds
        ],
        "points": order.points if order.status == Order.Status.EXECUTED else None,
    }
