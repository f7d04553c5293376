"""Quick pay: POST /api/v1/quick-pay (no key needed) and GET /api/v1/quick-pay/{id} (its id is the capability)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from platform_api.api import PublicPlatformAPIView
from platform_api.serializers import ErrorSerializer
from platform_api.views import IDEMPOTENCY_HEADER
from quickpay import selectors, services
from quickpay.serializers import QuickPayCreateSerializer, QuickPaymentSerializer


class QuickPayView(PublicPlatformAPIView):
    @extend_schema(
        operation_id="quick_pay_create",
        tags=["Quick pay"],
        request=QuickPayCreateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: QuickPaymentSerializer,
            400: ErrorSerializer,
            401: ErrorSerializer,
            403: ErrorSerializer,
            409: ErrorSerializer,
            429: ErrorSerializer,
        },
        description=(
            "Create a one-shot payment in a registry token on a chain that takes payments. No key is needed "
            "(rate limited to 5 requests a minute per IP). Sent with a key (`write`), the payment belongs to "
            "the key's organization, whose webhooks receive `payment.completed` when it is paid."
        ),
    )
    def post(self, request):
        serializer = QuickPayCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        organization = request.auth.organization if request.auth is not None else None
        payment = services.quick_payment_create(organization=organization, **serializer.validated_data)
        return Response(QuickPaymentSerializer(payment).data, status=status.HTTP_201_CREATED)


class QuickPaymentDetailView(PublicPlatformAPIView):
    public_rate_limit_setting = "QUICK_PAY_READ_RATE_LIMIT_PER_MINUTE"

    @extend_schema(
        operation_id="quick_pay_get",
        tags=["Quick pay"],
        responses={
            200: QuickPaymentSerializer,
            401: ErrorSerializer,
            404: ErrorSerializer,
            429: ErrorSerializer,
        },
        description=(
            "A quick payment's status: `awaiting_payment` (with `amount_received` so far), `paid` or `expired`. "
            "Its id is the capability: no key is needed."
        ),
    )
    def get(self, request, payment_id: str):
        payment = selectors.quick_payment_get(payment_id=payment_id)
        return Response(QuickPaymentSerializer(payment).data)
