"""Order-interface endpoints. Views parse, call a service or selector, and render the envelope."""

from __future__ import annotations

import functools
import uuid

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiParameter, extend_schema

from chains.evm import is_address
from chains.fields import ADDRESS_SCHEMA
from chains.registry import chain_get, chains
from core import openapi
from core.http import client_ip
from orders import bodies, examples, selectors
from orders.creation import order_create
from orders.envelope import ERROR, OrderAPIView, OrderError, ok, order_error_response
from orders.inputs import OrderRequest, QuoteInput
from orders.providers import token_shape
from orders.quotes import expected_reachable, quote_build
from orders.relay_webhooks import SignatureRefused, relay_webhook
from orders.representations import chain_data, order_data, order_detail_data
from orders.serializers import responses
from orders.serializers.orders import (
    ORDER_REQUEST,
    QUOTE_REQUEST,
    OrderCreateSerializer,
    order_type_of,
    quote_serializer_for,
)
from orders.types import EXPECTED_DST_TYPES
from platform_api.models import Permission

ERRORS = {400: ERROR, 401: ERROR, 404: ERROR, 429: ERROR, 500: ERROR}


def query_int(query, name: str, default: int, minimum: int, maximum: int) -> int:
    raw = query.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OrderError(f"{name} must be a whole number, got '{raw}'.") from None
    if not minimum <= value <= maximum:
        raise OrderError(f"{name} must be between {minimum} and {maximum}, got {value}.")
    return value


class OrderQuoteView(OrderAPIView):
    @extend_schema(
        tags=["Orders"],
        request=QUOTE_REQUEST,
        examples=[examples.QUOTE],
        responses={200: responses.QUOTE_RESPONSE, 502: ERROR, **ERRORS},
    )
    def post(self, request):
        serializer = quote_serializer_for(request.data)
        serializer.is_valid(raise_exception=True)
        quote, provider = quote_build(QuoteInput.from_wire(serializer.validated_data))
        return ok(quote, "Quote", headers={"X-Quote-Provider": provider})


class OrderCollectionView(OrderAPIView):
    @extend_schema(
        operation_id="orders_list",
        tags=["Orders"],
        parameters=[
            OpenApiParameter("creatorAddress", ADDRESS_SCHEMA, required=True),
            openapi.integer(
                "limit", minimum=1, maximum=settings.ORDER_LIST_MAX_LIMIT, description="Default 20."
            ),
            openapi.integer(
                "offset", minimum=0, maximum=1_000_000, description="Orders to skip. Newest first."
            ),
        ],
        responses={200: responses.ORDER_LIST_RESPONSE, **ERRORS},
    )
    def get(self, request):
        creator = request.query_params.get("creatorAddress")
        if not is_address(creator):
            raise OrderError(
                "creatorAddress is required and must be 0x followed by 40 hexadecimal characters."
            )
        limit = query_int(request.query_params, "limit", 20, 1, settings.ORDER_LIST_MAX_LIMIT)
        offset = query_int(request.query_params, "offset", 0, 0, 1_000_000)
        orders = selectors.orders_by_creator(creator_address=creator, limit=limit, offset=offset)
        return ok([order_data(order) for order in orders])

    @extend_schema(
        tags=["Orders"],
        request=ORDER_REQUEST,
        examples=[examples.ORDER],
        responses={200: responses.ORDER_RESPONSE, 409: ERROR, 503: ERROR, **ERRORS},
    )
    def post(self, request):
        order_type_of(request.data)
        serializer = OrderCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        asked = OrderRequest.from_wire(serializer.validated_data)
        if asked.type in EXPECTED_DST_TYPES:  # refused now rather than refunded once the payer paid
            expected_reachable(
                type=asked.type,
                src_chain=asked.src_chain,
                dst_chain=asked.dst_chain,
                src_token=asked.src_token_address,
                dst_token=asked.dst_token_address,
                src_amount=asked.src_amount,
                expected=int(asked.payload.get("expectedDstAmount") or 0),
            )
        order = order_create(
            organization=self.api_key.organization if self.api_key else None,
            request=asked,
            payer_ip=client_ip(request),
            fingerprint=fingerprint_from_headers(request),
        )
        return ok(order_data(order), "Order created")


def fingerprint_from_headers(request) -> dict | None:
    request_id = request.headers.get("X-Fingerprint-Request-Id")
    visitor_id = request.headers.get("X-Fingerprint-Visitor-Id")
    if request_id and visitor_id:
        return {"requestId": request_id[:255], "visitorId": visitor_id[:255]}
    return None


class OrderDetailView(OrderAPIView):
    sanitized = True

    @classmethod
    def as_view(cls, **initkwargs):
        """The view, in front of it the read of a plain GET (no key, no query: what payers, integrators and the
        SDK poll) from the order's stored body without DRF (orders.bodies); anything else, and an order
        without a body, goes through DRF, which answers the same."""
        view = super().as_view(**initkwargs)
        if not cls.sanitized:
            return view

        @functools.wraps(view)  # keeps DRF's marks: csrf_exempt, and `cls` for the schema
        def polled(request: HttpRequest, order_id: str) -> HttpResponse:
            plain = "HTTP_AUTHORIZATION" not in request.META and not request.META.get("QUERY_STRING")
            if request.method == "GET" and plain:
                try:
                    body = bodies.read(uuid.UUID(order_id))
                except ValueError:
                    body = None
                if body is not None:
                    return body_response(request, body)
            return view(request, order_id=order_id)

        return polled

    @extend_schema(
        tags=["Orders"],
        parameters=[openapi.path("order_id", openapi.UUID)],
        responses={200: responses.ORDER_DETAIL_RESPONSE, 403: ERROR, **ERRORS},
    )
    def get(self, request, order_id: str):
        parsed = selectors.parse_uuid(order_id, "orderId")
        if self.sanitized:
            body = bodies.read(parsed)
            if body is not None:
                return body_response(request, body)
        found = selectors.order_with_transactions(parsed)
        if found is None or not self.may_see(found.order):
            raise OrderError(f"Order {order_id} not found.", 404)
        return ok(order_detail_data(found, sanitized=self.sanitized))

    def may_see(self, order) -> bool:
        return True


def body_response(request: HttpRequest, body: bodies.Body) -> HttpResponse:
    """The order's stored body in the envelope, or 304 when the caller holds this version (`If-None-Match`)."""
    if request.headers.get("If-None-Match") == body.etag:
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(
            f'{{"success":true,"message":"OK","data":{body.text},"statusCode":200}}',
            content_type="application/json",
        )
    response["ETag"] = body.etag
    response["Cache-Control"] = "no-cache"
    return response


class OrderComprehensiveView(OrderDetailView):
    """Unsanitized (payer IP and fingerprint): only for a key of the order's organization."""

    sanitized = False

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if request.auth is None:
            raise OrderError("This endpoint needs a platform API key with the 'read' permission.", 401)
        if not request.auth.allows(Permission.READ):
            raise OrderError("This API key lacks the 'read' permission that this request requires.", 403)

    def may_see(self, order) -> bool:
        return order.organization_id == self.request.auth.organization_id


class ChainListView(OrderAPIView):
    @extend_schema(tags=["Tokens"], responses={200: responses.CHAIN_LIST_RESPONSE, **ERRORS})
    def get(self, request):
        """The chains the service knows; devnets (development only) carry the RPC URL a wallet can use."""
        return ok([chain_data(chain) for chain in chains()])


class ChainTokensView(OrderAPIView):
    @extend_schema(
        tags=["Tokens"],
        parameters=[
            openapi.path("chain_id", {"type": "integer", "minimum": 1, "maximum": 10**18 - 1}),
            openapi.text(
                "term", max_length=100, description="Symbol or name (case-insensitive), or an exact address."
            ),
            openapi.integer("limit", minimum=1, maximum=500, description="Default 50."),
        ],
        responses={200: responses.TOKEN_LIST_RESPONSE, **ERRORS},
    )
    def get(self, request, chain_id: str):
        # Any segment reaches the view, so a chain id that is not a number is a 400 (the contract's bad
        # request) rather than the router's 404; 18 digits at most, so it fits the 64-bit column.
        if not (chain_id.isascii() and chain_id.isdigit() and len(chain_id) <= 18 and int(chain_id) >= 1):
            shown = chain_id if len(chain_id) <= 40 else chain_id[:40] + "..."
            raise OrderError(f"chainId must be a positive integer of at most 18 digits, got '{shown}'.")
        if chain_get(int(chain_id)) is None:  # an unknown chain is not found, not an empty list
            known = ", ".join(str(chain.chain_id) for chain in chains())
            raise OrderError(
                f"chainId {chain_id} is not a chain this service knows (GET /chains: {known}).", status=404
            )
        limit = query_int(request.query_params, "limit", 50, 1, 500)
        term = (request.query_params.get("term") or "").strip()[:100] or None
        tokens = selectors.tokens_on_chain(chain_id=int(chain_id), term=term, limit=limit)
        return ok([token_shape(token) for token in tokens])


@csrf_exempt  # an API path, not a form: no CSRF token is ever sent (else an HTML 403 for POST/DELETE)
def order_route_not_found(request: HttpRequest, path: str = ""):
    return order_error_response(OrderError(f"No endpoint at {request.method} {request.path}.", 404))


class RelayWebhookView(OrderAPIView):
    """The relay provider's status events, authenticated by their signature alone (keyed by RELAY_API_KEY)."""

    authentication_classes: list[type] = []

    def check_throttles(self, request):
        return  # the provider's deliveries: the signature, not a rate, guards this

    @extend_schema(
        tags=["Orders"],
        operation_id="relay_webhook",
        request={"application/json": {"type": "object", "description": "A `request.status.updated` event."}},
        parameters=[
            OpenApiParameter(
                "X-Signature-Timestamp", str, OpenApiParameter.HEADER, required=True, description="Unix time."
            ),
            OpenApiParameter(
                "X-Signature-SHA256",
                str,
                OpenApiParameter.HEADER,
                required=True,
                description="Hex HMAC-SHA256 of '<timestamp>.<raw body>' keyed by the relay API key.",
            ),
        ],
        responses={200: responses.RELAY_WEBHOOK_RESPONSE, 400: ERROR, 401: ERROR},
    )
    def post(self, request):
        try:
            result = relay_webhook(
                body=request.body,  # the raw bytes the signature covers, before any parsing
                timestamp=request.headers.get("X-Signature-Timestamp", ""),
                signature=request.headers.get("X-Signature-SHA256", ""),
            )
        except SignatureRefused as exc:
            raise OrderError(f"relay webhook refused: {exc}.", 401) from None
        return ok({"result": result}, "relay webhook")
