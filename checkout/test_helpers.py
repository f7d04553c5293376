"""Test helpers (`/api/v1/test-helpers/…`): what a payer would do, done by the devnet wallet, for a test-mode
organization only (platform_api.testmode); refunds.test_helpers funds a refund. `checkout-cli trigger` drives the public API and these to make an
event happen on the devnets: a checkout paid (in full, or in part), a refund funded.

A live key is refused (403) before anything is read; the payment is a real transfer on a devnet from one of
anvil's payer accounts (chains.wallet), which then settles as any payment does: the watcher counts it, the
outbox sweeps and delivers, the events go out.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from chains.fields import TokenAmountField
from chains.handlers import payment_due
from chains.wallet import devnet_pay, devnet_pay_allowed
from checkout import payments, selectors
from core.errors import Conflict, InvalidRequest
from core.fields import StrictSerializer
from core.http import client_ip
from orders.states import WAITING
from platform_api.api import PlatformAPIView
from platform_api.testmode import ensure_test_key
from platform_api.views import ERRORS

TAGS = ["Test helpers"]


def devnet_session_pay(*, session, amount: int | None, payer_ip: str) -> dict[str, Any]:
    """The devnet wallet pays an open session in the token and on the chain it is priced in (`amount`, default
    what its order asks), as a payer on its page would: its waiting order, or a new one. What was sent."""
    if session.status != session.Status.OPEN:
        raise Conflict(f"checkout session {session.id} is {session.status}; only an open one can be paid.")
    asked = amount if amount is not None else int(session.amount or 0)
    if session.token_address:  # before an order is made for it
        devnet_pay_allowed(chain_id=session.paid_on_chain, token=session.token_address, amount=asked)
    order = payments.session_current_order(session)
    if order is None or order.status not in WAITING:
        order = payments.session_order_create(
            session=session,
            src_chain=session.paid_on_chain,
            src_token=session.token_address,
            payer_ip=payer_ip,
        )
    due = payment_due(str(order.id))
    if due is None:  # the order was just read or made
        raise InvalidRequest(f"checkout session {session.id} has no order to pay.")
    chain_id, token, deposit_address, price = due
    amount = price if amount is None else amount
    return {
        "object": "test_payment",
        "checkout_session_id": session.id,
        "order_id": str(order.id),
        "chain_id": chain_id,
        "token_address": token,
        "deposit_address": deposit_address,
        "amount": str(amount),
        "tx_hash": devnet_pay(chain_id=chain_id, token=token, to=deposit_address, amount=amount),
    }


class TestPaySerializer(StrictSerializer):
    amount = TokenAmountField(
        required=False,
        help_text="What the wallet sends, in the token's smallest unit; default: what the order asks. Less: "
        "a partial payment (the rest is awaited; expired, it is refunded).",
    )


TestPaymentSerializer = inline_serializer(
    "TestPayment",
    {
        "object": serializers.CharField(help_text="`test_payment`."),
        "checkout_session_id": serializers.CharField(),
        "order_id": serializers.CharField(),
        "chain_id": serializers.IntegerField(),
        "token_address": serializers.CharField(),
        "deposit_address": serializers.CharField(),
        "amount": serializers.CharField(),
        "tx_hash": serializers.CharField(),
    },
)


class TestSessionPayView(PlatformAPIView):
    @extend_schema(
        operation_id="test_helpers_checkout_sessions_pay",
        tags=TAGS,
        request=TestPaySerializer,
        responses={200: TestPaymentSerializer, **ERRORS},
        description="Test mode only (a `svc_test_` key): the devnet wallet pays the open checkout session in "
        "the token and on the chain it is priced in, as a payer on its page would (its order is made if "
        "the session has none waiting). The payment then settles as any does.",
    )
    def post(self, request, session_id: str):
        ensure_test_key(request.auth)
        serializer = TestPaySerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        session = selectors.checkout_session_get(
            organization=request.auth.organization, session_id=session_id
        )
        body = devnet_session_pay(session=session, amount=data.get("amount"), payer_ip=client_ip(request))
        return Response(body)
