"""The typed inputs of the checkout's services: the edges (the API, the hosted page, a widget's page)
build them from what they received, and the services read attributes, never a request's field names."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class SessionRequest:
    """A checkout for a payment link (its token, chain, recipient and price), or for an `amount` of a token
    on a chain to a recipient; without an amount the payer enters it on the hosted page."""

    payment_link_id: str | None = None
    token_address: str | None = None
    chain_id: int | None = None
    recipient_address: str | None = None
    amount: int | None = None
    product_id: str | None = None
    success_url: str = ""
    cancel_url: str = ""
    client_reference_id: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    customer_email: str = ""
    customer_name: str = ""
    expires_in: int | None = None  # seconds; none: CHECKOUT_SESSION_DEFAULT_TTL_SECONDS
    utm_source: str = ""
    utm_medium: str = ""
    utm_campaign: str = ""
    discount_code: str = ""

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> SessionRequest:
        """A validated body or URL parameters (snake_case, as the platform names them); an empty or null
        value is the field's default."""
        values = {f.name: data[f.name] for f in fields(cls) if data.get(f.name) not in (None, "")}
        if "amount" in values:
            values["amount"] = int(values["amount"])
        return cls(**values)
