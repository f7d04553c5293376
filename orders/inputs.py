"""The typed inputs of order services: the edges (views, the checkout, commands) build them from their
wire formats, and services read attributes, never a request's field names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orders.types import TYPES
from orders.types.base import EXACT_INPUT as EXACT_INPUT  # which side a quote fixes, as the wire says
from orders.types.base import EXACT_OUTPUT as EXACT_OUTPUT


@dataclass(frozen=True)
class OrderRequest:
    """What an order is for: the payer's side (`src_*`), the recipient's (`dst_*`), and the type's payload."""

    type: str
    src_chain: int
    dst_chain: int
    src_token_address: str
    dst_token_address: str
    src_amount: int
    recipient_address: str
    payload: dict[str, Any]
    refund_address: str = ""
    creator_address: str = ""
    partner_id: str | None = None
    client_reference_id: str | None = None
    checkout_session_id: str | None = None
    action: str | None = None
    onramp: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> OrderRequest:
        """The order interface's validated body (camelCase, as the contract names it)."""
        return cls(
            type=data["type"],
            src_chain=data["srcChain"],
            dst_chain=data["dstChain"],
            src_token_address=data["srcTokenAddress"],
            dst_token_address=data["dstTokenAddress"],
            src_amount=int(data["srcAmount"]),
            recipient_address=data["recipientAddress"],
            payload=data["payload"],
            refund_address=data.get("refundAddress") or "",
            creator_address=data.get("creatorAddress") or "",
            partner_id=data.get("partnerId"),
            client_reference_id=data.get("clientReferenceId") or None,
            checkout_session_id=str(data["checkoutSessionId"]) if data.get("checkoutSessionId") else None,
            action=data.get("action"),
            onramp=data.get("onramp"),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass(frozen=True)
class QuoteInput:
    """What a quote prices: the payer's side (`src_*`), the recipient's (`dst_*`), which side is fixed
    (`trade_type`) and by how much (`amount`, in base units of that side's token)."""

    type: str
    src_chain: int
    dst_chain: int
    src_token_address: str
    dst_token_address: str
    trade_type: str
    amount: int
    recipient_address: str | None = None
    onramp_vendor: str | None = None

    @property
    def amount_field(self) -> str:
        return TYPES[self.type].amount_field

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> QuoteInput:
        """The order interface's validated quote body; its type says which side is fixed and by how much
        (orders.types: a swap says which side; `custom_exact_in` fixes what the payer sends; every other type
        fixes what must arrive: a price, an entry fee, an x402 payment)."""
        kind = data["type"]
        trade_type, amount = TYPES[kind].fixes(data)
        return cls(
            type=kind,
            src_chain=data["srcChain"],
            dst_chain=data["dstChain"],
            src_token_address=data["srcTokenAddress"],
            dst_token_address=data["dstTokenAddress"],
            trade_type=trade_type,
            amount=int(amount),
            recipient_address=data.get("recipientAddress") or None,
            onramp_vendor=data.get("onrampVendor"),
        )
