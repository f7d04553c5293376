"""The hosted page's payment by signature (`POST /x402/checkout/{session}/authorization`, checkout's wallet.js).

Where the waiting order's token takes EIP-3009, the payer's wallet signs a `TransferWithAuthorization` of (at
most) what the order still asks, to its deposit address; it is checked as the facilitator checks any payment
and settled through the outbox by `service.settle` (the service pays the gas). The deposit then arrives at the
order's address and is counted as any other. Answers once the transaction is in a block (or after
X402_SETTLE_WAIT_SECONDS, `pending`); a refusal is 400 with the protocol's reason and a sentence.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from chains.tokens import token_get
from checkout.selectors import order_received, session_waiting_order
from facilitator import protocol
from facilitator.links import Answer
from facilitator.models import Settlement
from facilitator.protocol import Refused
from facilitator.service import settle, settlement_answer


def signed_checkout_payment(session_id: str, body: Any) -> Answer:
    """The payer's signed authorization for the session's waiting order, settled; or why not."""
    session, order = session_waiting_order(session_id)
    if session is None:
        return Answer(404, {"error": "There is no checkout at this address."}, {})
    if (
        order is None or session.organization_id is None
    ):  # an order interface's session belongs to no merchant
        return Answer(409, {"error": "This checkout awaits no payment now."}, {})
    token = token_get(chain_id=order.src_chain, address=order.src_token_address)
    if token is None or not token.eip3009:
        return Answer(400, {"error": "This token cannot be paid by signature: send it from the wallet."}, {})
    authorization = body.get("authorization") if isinstance(body, dict) else None
    try:
        value = protocol.uint_of(authorization.get("value") if isinstance(authorization, dict) else None)
        remaining = int(order.src_amount) - order_received(order)
        if not 0 < value <= remaining:
            raise Refused(
                protocol.VALUE_MISMATCH, f"the authorization must be for at most what is owed, {remaining}"
            )
        required = {
            "scheme": protocol.SCHEME,
            "network": f"eip155:{order.src_chain}",
            "amount": str(value),
            "asset": token.address,
            "payTo": order.global_address,
            "maxTimeoutSeconds": settings.X402_OFFER_SECONDS,
            "extra": {"name": token.eip712_name, "version": token.eip712_version},
        }
        payment = protocol.read_request(
            {
                "x402Version": 2,
                "paymentPayload": {
                    "x402Version": 2,
                    "accepted": required,
                    "payload": {"authorization": authorization, "signature": body.get("signature")},
                },
                "paymentRequirements": required,
            }
        )
        row, refusal = settle(payment, organization_id=session.organization_id, api_key_id=None)
    except Refused as refused:
        row, refusal = None, refused
    if row is None:
        assert refusal is not None
        return Answer(400, {"error": refusal.message, "reason": refusal.reason}, {})
    if row.status == Settlement.Status.FAILED:
        answer = settlement_answer(row, payment.network)
        return Answer(400, {"error": answer.get("errorMessage", ""), "reason": answer["errorReason"]}, {})
    return Answer(200, {"status": row.status, "transaction": row.tx_hash}, {})
