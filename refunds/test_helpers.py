"""A test helper (`/api/v1/test-helpers/refunds/{id}/fund`): the devnet wallet funds a test-mode organization's
refund as the merchant would (checkout.test_helpers has the others)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from chains.wallet import devnet_pay
from core.errors import Conflict
from platform_api.api import PlatformAPIView
from platform_api.testmode import ensure_test_key
from platform_api.views import ERRORS
from refunds.models import Refund
from refunds.selectors import refund_get


def devnet_refund_fund(refund: Refund) -> dict[str, Any]:
    """The devnet wallet sends a refund that requires funding what it still lacks, as the merchant would."""
    if refund.status != Refund.Status.REQUIRES_FUNDING or not refund.funding_address:
        raise Conflict(
            f"refund {refund.id} is {refund.status}; only one that requires funding can be funded."
        )
    lacking = int(refund.amount) - int(refund.funding_received)
    return {
        "object": "test_funding",
        "refund_id": refund.id,
        "chain_id": refund.chain_id,
        "token_address": refund.token_address,
        "funding_address": refund.funding_address,
        "amount": str(lacking),
        "tx_hash": devnet_pay(
            chain_id=refund.chain_id, token=refund.token_address, to=refund.funding_address, amount=lacking
        ),
    }


TestFundingSerializer = inline_serializer(
    "TestFunding",
    {
        "object": serializers.CharField(help_text="`test_funding`."),
        "refund_id": serializers.CharField(),
        "chain_id": serializers.IntegerField(),
        "token_address": serializers.CharField(),
        "funding_address": serializers.CharField(),
        "amount": serializers.CharField(),
        "tx_hash": serializers.CharField(),
    },
)


class TestRefundFundView(PlatformAPIView):
    @extend_schema(
        operation_id="test_helpers_refunds_fund",
        tags=["Test helpers"],
        request=None,
        responses={200: TestFundingSerializer, **ERRORS},
        description="Test mode only (a `svc_test_` key): the devnet wallet sends a refund that `requires_funding` "
        "what it still lacks, to its funding address, as the merchant would.",
    )
    def post(self, request, refund_id: str):
        ensure_test_key(request.auth)
        refund = refund_get(organization=request.auth.organization, refund_id=refund_id)
        return Response(devnet_refund_fund(refund))
