"""The platform interface's checkout sessions (`cs_`): list, create, retrieve, expire."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from checkout import selectors, sessions
from checkout.filters import PlatformSessionFilters
from checkout.inputs import SessionRequest
from checkout.serializers import PlatformSessionCreateSerializer, PlatformSessionSerializer
from core import openapi
from platform_api.api import PlatformAPIView, list_of, render_list
from platform_api.inputs import MAX_MILLIS
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER, LIST_PARAMETERS


class PlatformSessionCollectionView(PlatformAPIView):
    @extend_schema(
        operation_id="platform_checkout_sessions_list",
        tags=["Checkout sessions"],
        parameters=[
            *LIST_PARAMETERS,
            OpenApiParameter(
                "status", str, enum=["open", "processing", "completed", "expired", "failed", "active"]
            ),
            openapi.text("payment_link_id", max_length=64),
            openapi.integer(
                "from", minimum=0, maximum=MAX_MILLIS, description="Created at or after (ms since the epoch)."
            ),
            openapi.integer(
                "to", minimum=0, maximum=MAX_MILLIS, description="Created at or before (ms since the epoch)."
            ),
        ],
        responses={200: list_of("CheckoutSessionList", PlatformSessionSerializer(many=True)), **ERRORS},
    )
    def get(self, request):
        filters = PlatformSessionFilters.filters(request.query_params)
        sessions = selectors.checkout_session_list(organization=request.auth.organization, **filters)
        return render_list(request, sessions, PlatformSessionSerializer, ("created_at",))

    @extend_schema(
        operation_id="platform_checkout_sessions_create",
        tags=["Checkout sessions"],
        request=PlatformSessionCreateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: PlatformSessionSerializer, **ERRORS},
        description="A checkout for a payment link, or for an amount of a token on a chain to a recipient. "
        "Send the payer to its `url`.",
    )
    def post(self, request):
        serializer = PlatformSessionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        session = sessions.platform_session_create(
            organization=request.auth.organization, ask=SessionRequest.from_wire(serializer.validated_data)
        )
        return Response(PlatformSessionSerializer(session).data, status=status.HTTP_201_CREATED)


class PlatformSessionDetailView(PlatformAPIView):
    @extend_schema(
        operation_id="platform_checkout_sessions_retrieve",
        tags=["Checkout sessions"],
        responses={200: PlatformSessionSerializer, **ERRORS},
    )
    def get(self, request, session_id: str):
        session = selectors.checkout_session_get(
            organization=request.auth.organization, session_id=session_id
        )
        return Response(PlatformSessionSerializer(session).data)


class PlatformSessionExpireView(PlatformAPIView):
    @extend_schema(
        operation_id="platform_checkout_sessions_expire",
        tags=["Checkout sessions"],
        request=None,
        parameters=[IDEMPOTENCY_HEADER],
        responses={200: PlatformSessionSerializer, **ERRORS},
        description="Only an `open` session expires; any other is 400 `invalid_status_transition`.",
    )
    def post(self, request, session_id: str):
        session = selectors.checkout_session_get(
            organization=request.auth.organization, session_id=session_id
        )
        session = sessions.session_expire(session_id=session.id, reason="expired_by_merchant", strict=True)
        return Response(PlatformSessionSerializer(session).data)
