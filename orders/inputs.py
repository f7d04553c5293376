"""The typed inputs of order services: the edges (views, the checkout, commands) build them from their
wire formats, and services read attributes, never a request's field names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
