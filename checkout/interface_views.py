"""The order interface's checkout sessions: `POST /checkout-sessions`, `GET /checkout-sessions/{id}` and
`POST /checkout-sessions/{id}/expire`, in that interface's envelope (`orders.envelope`)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers

from checkout import interface
from core import openapi
from orders.envelope import ERROR, OrderAPIView, OrderError, ok
from orders.representations import order_data
from orders.selectors import parse_uuid
from orders.serializers.common import (
    JsonObjectField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    TemplateUrlField,
)
from orders.serializers.responses import JSON_OBJECT, OrderOutputSerializer, envelope

ERRORS = {400: ERROR, 401: ERROR, 404: ERROR, 429: ERROR, 500: ERROR}
# As this interface's contract says them (`checkout.interface.SHOWN_STATUS` maps the one session's words).
STATUSES = [("open", "Open"), ("processing", "Processing"), ("complete", "Complete"), ("expired", "Expired")]

EXAMPLE = OpenApiExample(
    "A checkout session",
    request_only=True,
    value={"success_url": "https://shop.example/done?s={SESSION_ID}", "metadata": {"cart": "42"}},
)


class CheckoutSessionCreateSerializer(StrictSerializer):
    success_url = TemplateUrlField(required=False, allow_null=True)
    cancel_url = TemplateUrlField(required=False, allow_null=True)
    metadata = JsonObjectField(required=False)
    client_reference_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)
    expires_in = StrictIntegerField(required=False, min_value=300, max_value=86400)


class SessionOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=STATUSES)
    success_url = serializers.CharField(allow_null=True)
    cancel_url = serializers.CharField(allow_null=True)
    metadata = JSON_OBJECT()
    client_reference_id = serializers.CharField(allow_null=True)
    expires_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()


class SessionWithOrderOutputSerializer(SessionOutputSerializer):
    order = OrderOutputSerializer(
        required=False, allow_null=True, help_text="Only with include=order: the session's order, or null."
    )


class SessionExpiredOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=STATUSES)


SESSION_RESPONSE = envelope("CheckoutSessionResponse", SessionOutputSerializer())
SESSION_DETAIL_RESPONSE = envelope("CheckoutSessionDetailResponse", SessionWithOrderOutputSerializer())
SESSION_EXPIRED_RESPONSE = envelope("CheckoutSessionExpiredResponse", SessionExpiredOutputSerializer())


class CheckoutSessionCreateView(OrderAPIView):
    @extend_schema(
        tags=["Checkout sessions"],
        request=CheckoutSessionCreateSerializer,
        examples=[EXAMPLE],
        responses={200: SESSION_RESPONSE, **ERRORS},
    )
    def post(self, request):
        serializer = CheckoutSessionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        organization = self.api_key.organization if self.api_key else None
        session = interface.interface_session_create(organization=organization, **serializer.validated_data)
        return ok(interface.session_data(session), "Checkout session created")


class CheckoutSessionDetailView(OrderAPIView):
    @extend_schema(
        tags=["Checkout sessions"],
        parameters=[
            openapi.path("session_id", openapi.UUID),
            OpenApiParameter("include", str, enum=["order"], description="Embed the session's order."),
        ],
        responses={200: SESSION_DETAIL_RESPONSE, **ERRORS},
    )
    def get(self, request, session_id: str):
        session = interface.interface_session_get(parse_uuid(session_id, "sessionId"))
        if session is None:
            raise OrderError(f"Checkout session {session_id} not found.", 404)
        data = interface.session_data(session)
        if request.query_params.get("include") == "order":
            order = interface.order_for_session(session.pk)
            data["order"] = order_data(order) if order else None
        return ok(data)


class CheckoutSessionExpireView(OrderAPIView):
    @extend_schema(
        tags=["Checkout sessions"],
        request=None,
        parameters=[openapi.path("session_id", openapi.UUID)],
        responses={200: SESSION_EXPIRED_RESPONSE, 400: ERROR, 429: ERROR},
    )
    def post(self, request, session_id: str):
        session = interface.interface_session_expire(parse_uuid(session_id, "sessionId"))
        if session is None:
            raise OrderError(f"Checkout session {session_id} was not found or is not open.")
        return ok({"id": session.id, "status": interface.shown_status(session)}, "Checkout session expired")
