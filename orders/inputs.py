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


EXACT_INPUT = "EXACT_INPUT"  # the payer's amount is fixed; what arrives follows
EXACT_OUTPUT = "EXACT_OUTPUT"  # what arrives is fixed; the payer's amount follows

# The wire field that carries the fixed amount, per order type (named in a refusal).
AMOUNT_FIELDS = {
    "custom": "payload.amount",
    "fund_tournament": "fundAmount",
    "mint_nft": "price",
    "join_tournament": "price",
}


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
        return AMOUNT_FIELDS.get(self.type, "amount")

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> QuoteInput:
        """The order interface's validated quote body. A swap says which side is fixed;
        `custom_exact_in` fixes what the payer sends; every other type fixes what must arrive (a price,
        an entry fee, an x402 payment)."""
        kind = data["type"]
        if kind == "swap":
            trade_type, amount = data["tradeType"], data["amount"]
        elif kind == "custom_exact_in":
            trade_type, amount = EXACT_INPUT, data["amount"]
        elif kind in ("x402_swap", "duel"):
            trade_type, amount = EXACT_OUTPUT, data["amount"]
        elif kind == "custom":
            trade_type, amount = EXACT_OUTPUT, data["payload"]["amount"]
        elif kind == "fund_tournament":
            trade_type, amount = EXACT_OUTPUT, data["fundAmount"]
        else:  # mint_nft, join_tournament
            trade_type, amount = EXACT_OUTPUT, data["price"]
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
