"""Onramp helpers on the order interface: vendorA URLs and tokens, vendorB support."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers

from core import openapi
from core.geo import locate
from core.http import client_ip
from onramp import services
from onramp.serializers import DirectUrlSerializer, OnrampUrlSerializer, SessionTokenSerializer
from orders.envelope import ERROR, OrderAPIView, OrderError, envelope, ok

URL_DATA = inline_serializer(
    "OnrampUrlData",
    {"url": serializers.CharField(), "sessionToken": serializers.CharField(required=False)},
)
TOKEN_DATA = inline_serializer(
    "SessionTokenData",
    {"token": serializers.CharField(), "channelId": serializers.CharField(allow_null=True)},
)


class CardSupportSerializer(serializers.Serializer):
    isSupport = serializers.BooleanField()
    formattedTotalUsd = serializers.CharField(required=False, help_text="Only with usdAmount.")
    formattedOnrampUsd = serializers.CharField(required=False)
    formattedFeeUsd = serializers.CharField(required=False)


class VendorBSupportSerializer(serializers.Serializer):
    stripeOnramp = serializers.BooleanField()
    stripeWeb2 = CardSupportSerializer()


ERRORS = {400: ERROR, 429: ERROR, 500: ERROR, 502: ERROR, 503: ERROR}


def _validated(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class VendorAOnrampUrlView(OrderAPIView):
    @extend_schema(
        tags=["Onramp"],
        request=OnrampUrlSerializer,
        responses={200: envelope("OnrampUrlResponse", URL_DATA), **ERRORS},
    )
    def post(self, request):
        data = _validated(OnrampUrlSerializer, request.data)
        return ok(services.vendor_a_onramp_url(data=data, client_ip=client_ip(request)), "Onramp URL")


class VendorADirectUrlView(OrderAPIView):
    @extend_schema(
        tags=["Onramp"],
        request=DirectUrlSerializer,
        responses={200: envelope("DirectUrlResponse", URL_DATA), **ERRORS},
    )
    def post(self, request):
        data = _validated(DirectUrlSerializer, request.data)
        return ok(services.vendor_a_direct_url(data=data, client_ip=client_ip(request)), "Direct URL")


class VendorASessionTokenView(OrderAPIView):
    @extend_schema(
        tags=["Onramp"],
        request=SessionTokenSerializer,
        responses={200: envelope("SessionTokenResponse", TOKEN_DATA), **ERRORS},
    )
    def post(self, request):
        data = _validated(SessionTokenSerializer, request.data)
        token = services.vendor_a_session_token(
            destination_address=data["destinationAddress"],
            blockchains=data["blockchains"],
            assets=data.get("assets"),
            client_ip=client_ip(request),
        )
        return ok(token, "Session token")


class VendorAOptionsView(OrderAPIView):
    @extend_schema(
        tags=["Onramp"],
        parameters=[
            OpenApiParameter(
                "country",
                {"type": "string", "pattern": "^[A-Za-z]{2}$"},
                required=True,
                description="ISO 3166-1 alpha-2.",
            ),
            openapi.text("subdivision", max_length=10),
            openapi.text(
                "payment_method", max_length=64, description="Keep only this payment method's limits."
            ),
            openapi.text("purchase_method", max_length=64),
            OpenApiParameter(
                "chainIds",
                {
                    "type": "array",
                    "items": {"type": "string", "pattern": openapi.PRINTABLE, "maxLength": 200},
                },
                explode=True,
                description="Keep only networks on these chains.",
            ),
        ],
        responses={200: envelope("OnrampOptionsResponse", serializers.DictField()), **ERRORS},
    )
    def get(self, request):
        query = request.query_params
        country = (query.get("country") or "").strip().upper()
        if len(country) != 2 or not country.isalpha():
            raise OrderError("country is required: an ISO 3166-1 alpha-2 code such as US.")
        options = services.vendor_a_options(
            country=country,
            subdivision=(query.get("subdivision") or "").upper() or None,
            chain_ids=[
                c.strip() for value in query.getlist("chainIds") for c in value.split(",") if c.strip()
            ]
            or None,
            payment_method=query.get("payment_method") or None,
        )
        return ok(options, "Options")


class VendorBSupportedView(OrderAPIView):
    @extend_schema(
        tags=["Onramp"],
        parameters=[
            OpenApiParameter(
                "usdAmount",
                {"type": "string", "pattern": r"^[0-9]{1,9}(\.[0-9]{1,6})?$"},
                description="Card amount in USD, e.g. 25.00 (0 is simply not supported).",
            )
        ],
        responses={200: envelope("VendorBSupportResponse", VendorBSupportSerializer()), **ERRORS},
    )
    def get(self, request):
        raw = request.query_params.get("usdAmount")
        amount = None
        if raw not in (None, ""):
            try:
                amount = Decimal(raw)
            except InvalidOperation:
                amount = None
            if amount is None or not amount.is_finite() or amount < 0 or amount > Decimal("1000000000"):
                raise OrderError(f"usdAmount must be a decimal amount of at most 1000000000, got '{raw}'.")
        return ok(services.vendor_b_support(location=locate(request), usd_amount=amount), "vendorB support")


class VendorBWebhookView(OrderAPIView):
    """vendorB's payment-intent events, authenticated by their signature alone (VENDOR_B_WEBHOOK_SECRET)."""

    authentication_classes = []  # its signature is its authentication

    def check_throttles(self, request):
        return  # the vendor's deliveries come from a few addresses; the signature, not a rate, guards this

    @extend_schema(
        tags=["Onramp"],
        operation_id="onramp_vendor_b_webhook",
        request={"application/json": {"type": "object", "description": "A vendorB event, signed."}},
        parameters=[
            OpenApiParameter(
                "VendorB-Signature",
                str,
                OpenApiParameter.HEADER,
                required=True,
                description="\"t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<raw body>' with the webhook secret>\".",
            )
        ],
        responses={
            200: envelope(
                "VendorBWebhookResponse",
                inline_serializer("VendorBWebhookData", {"result": serializers.CharField()}),
            ),
            400: ERROR,
            500: ERROR,
        },
    )
    def post(self, request):
        body = request.body  # the raw bytes the signature covers, before any parsing
        result = services.vendor_b_webhook(body=body, signature=request.headers.get("VendorB-Signature", ""))
        return ok({"result": result}, "vendorB webhook")
