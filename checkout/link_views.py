"""Payment links (with items, duplicate, sessions, stats, visitors, a link made from a product) and the
transactions that paid them (list, stats, export, a customer's). Views parse, call, render."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from checkout import links as services
from checkout import selectors
from checkout.filters import PaymentLinkFilters, SessionFilters
from checkout.models import PaymentLink
from checkout.selectors import MAX_DAYS
from checkout.serializers import (
    LinkItemSerializer,
    PaymentLinkDetailSerializer,
    PaymentLinkItemSerializer,
    PaymentLinkSerializer,
    PaymentLinkUpdateSerializer,
    PaymentLinkWriteSerializer,
    PlatformSessionSerializer,
)
from checkout.visits import views_settled
from core import openapi
from merchant.api import product_get
from platform_api.api import PlatformAPIView, deleted, list_of, render_list
from platform_api.context import RequestContext
from platform_api.pagination import parse_positive_int
from platform_api.rows import Rows
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER, LIST_PARAMETERS

LINK_SORTS = ("created_at", "updated_at", "name", "current_uses")
LINK_ROWS = Rows(
    PaymentLinkSerializer,
    object=lambda _row: "payment_link",
    url=lambda row: f"{settings.PUBLIC_BASE_URL}/pay/{row['short_code']}",
)


SESSION_SORTS = ("created_at", "updated_at", "expires_at")


class PaymentLinkViewMixin:
    request: Request

    def get_link(self, link_id: str) -> PaymentLink:
        return selectors.payment_link_get(organization=self.request.auth.organization, link_id=link_id)


class PaymentLinkCollectionView(PaymentLinkViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="payment_links_list",
        tags=["Payment links"],
        parameters=[
            *LIST_PARAMETERS,
            OpenApiParameter("sort", str, enum=list(LINK_SORTS), description="Default created_at."),
            openapi.text("search", description="Part of the name or short code."),
            OpenApiParameter("active", str, enum=["true", "false"]),
        ],
        responses={200: list_of("PaymentLinkList", PaymentLinkSerializer(many=True)), **ERRORS},
    )
    def get(self, request):
        filters = PaymentLinkFilters.filters(request.query_params)
        links = selectors.payment_link_list(organization=request.auth.organization, **filters)
        return render_list(request, links, PaymentLinkSerializer, LINK_SORTS, rows=LINK_ROWS)

    @extend_schema(
        operation_id="payment_links_create",
        tags=["Payment links"],
        request=PaymentLinkWriteSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: PaymentLinkDetailSerializer, **ERRORS},
    )
    def post(self, request):
        serializer = PaymentLinkWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        link = services.payment_link_create(
            ctx=RequestContext.from_request(request),
            organization=request.auth.organization,
            data=serializer.validated_data,
        )
        return Response(PaymentLinkDetailSerializer(link).data, status=status.HTTP_201_CREATED)


class PaymentLinkDetailView(PaymentLinkViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="payment_links_retrieve",
        tags=["Payment links"],
        responses={200: PaymentLinkDetailSerializer, **ERRORS},
    )
    def get(self, request, link_id: str):
        return Response(PaymentLinkDetailSerializer(self.get_link(link_id)).data)

    @extend_schema(
        operation_id="payment_links_update",
        tags=["Payment links"],
        request=PaymentLinkUpdateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={200: PaymentLinkDetailSerializer, **ERRORS},
    )
    def patch(self, request, link_id: str):
        link = self.get_link(link_id)
        serializer = PaymentLinkUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        link = services.payment_link_update(
            ctx=RequestContext.from_request(request), link=link, data=serializer.validated_data
        )
        return Response(PaymentLinkDetailSerializer(link).data)

    @extend_schema(
        operation_id="payment_links_delete",
        tags=["Payment links"],
        responses={200: deleted("PaymentLinkDeleted"), **ERRORS},
    )
    def delete(self, request, link_id: str):
        link = self.get_link(link_id)
        services.payment_link_delete(ctx=RequestContext.from_request(request), link=link)
        return Response({"object": "payment_link", "id": link.id, "deleted": True})


class PaymentLinkDuplicateView(PaymentLinkViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="payment_links_duplicate",
        tags=["Payment links"],
        request=PaymentLinkWriteSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: PaymentLinkDetailSerializer, **ERRORS},
        description="A copy of the link and its items; any field of the body overrides the copy's.",
    )
    def post(self, request, link_id: str):
        link = self.get_link(link_id)
        serializer = PaymentLinkWriteSerializer(data=request.data or {}, partial=True)
        serializer.is_valid(raise_exception=True)
        copy = services.payment_link_duplicate(
            ctx=RequestContext.from_request(request), link=link, overrides=serializer.validated_data
        )
        return Response(PaymentLinkDetailSerializer(copy).data, status=status.HTTP_201_CREATED)


class PaymentLinkSessionsView(PaymentLinkViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="payment_links_sessions",
        tags=["Payment links"],
        parameters=[
            *LIST_PARAMETERS,
            OpenApiParameter("status", str, enum=["active", "completed", "expired"]),
        ],
        responses={200: list_of("PaymentLinkSessionList", PlatformSessionSerializer(many=True)), **ERRORS},
    )
    def get(self, request, link_id: str):
        link = self.get_link(link_id)
        filters = SessionFilters.filters(request.query_params)
        sessions = selectors.checkout_session_list(
            organization=request.auth.organization, link=link, **filters
        )
        return render_list(request, sessions, PlatformSessionSerializer, ("created_at",))


def _days(request) -> int:
    return parse_positive_int(request.query_params, "days", 30, MAX_DAYS)


class PaymentLinkStatsView(PaymentLinkViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="payment_links_stats",
        tags=["Payment links"],
        parameters=[openapi.integer("days", minimum=1, maximum=MAX_DAYS, description="Default 30.")],
        responses={
            200: inline_serializer(
                "PaymentLinkStats",
                {
                    "object": serializers.CharField(),
                    "payment_link_id": serializers.CharField(),
                    "days": serializers.IntegerField(),
                    "views": serializers.IntegerField(),
                    "sessions": serializers.IntegerField(),
                    "completions": serializers.IntegerField(),
                    "view_to_session_rate": serializers.FloatField(),
                    "session_to_completion_rate": serializers.FloatField(),
                    "conversion_rate": serializers.FloatField(),
                    "revenue_usd": serializers.CharField(),
                    "daily": inline_serializer(
                        "PaymentLinkStatsDay",
                        {
                            "date": serializers.DateField(),
                            "views": serializers.IntegerField(),
                            "sessions": serializers.IntegerField(),
                            "completions": serializers.IntegerField(),
                        },
                        many=True,
                    ),
                    "utm": inline_serializer(
                        "PaymentLinkStatsUtm",
                        {
                            "utm_source": serializers.CharField(allow_null=True),
                            "utm_medium": serializers.CharField(allow_null=True),
                            "utm_campaign": serializers.CharField(allow_null=True),
                            "views": serializers.IntegerField(),
                        },
                        many=True,
                    ),
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request, link_id: str):
        link = self.get_link(link_id)
        views_settled()  # the views still buffered in Redis count too
        return Response(selectors.payment_link_stats(link=link, days=_days(request)))


class VisitSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `vis_`.")
    country = serializers.CharField(allow_null=True)
    referrer = serializers.CharField(allow_null=True)
    user_agent = serializers.CharField(allow_null=True)
    utm_source = serializers.CharField(allow_null=True)
    utm_medium = serializers.CharField(allow_null=True)
    utm_campaign = serializers.CharField(allow_null=True)
    created_at = serializers.SerializerMethodField()

    def get_object(self, _obj) -> str:
        return "visitor"

    def get_created_at(self, visit) -> int:
        return int(visit.created_at.timestamp() * 1000)

    def to_representation(self, instance):
        return {
            key: (value if value != "" else None)
            for key, value in super().to_representation(instance).items()
        }


class PaymentLinkVisitorsView(PaymentLinkViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="payment_links_visitors",
        tags=["Payment links"],
        parameters=[
            *LIST_PARAMETERS,
            openapi.integer("days", minimum=1, maximum=MAX_DAYS, description="Default 30."),
        ],
        responses={200: list_of("PaymentLinkVisitorList", VisitSerializer(many=True)), **ERRORS},
    )
    def get(self, request, link_id: str):
        link = self.get_link(link_id)
        views_settled()
        visits = selectors.payment_link_visitors(link=link, days=_days(request))
        return render_list(request, visits, VisitSerializer, ("created_at",))


class PaymentLinkItemsView(PaymentLinkViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="payment_link_items_list",
        tags=["Payment links"],
        responses={200: list_of("PaymentLinkItemList", PaymentLinkItemSerializer(many=True)), **ERRORS},
    )
    def get(self, request, link_id: str):
        items = list(self.get_link(link_id).items.all())
        return Response(
            {
                "object": "list",
                "data": PaymentLinkItemSerializer(items, many=True).data,
                "has_more": False,
                "total_count": len(items),
                "url": request.path,
            }
        )

    @extend_schema(
        operation_id="payment_link_items_create",
        tags=["Payment links"],
        request=LinkItemSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: PaymentLinkItemSerializer, **ERRORS},
    )
    def post(self, request, link_id: str):
        link = self.get_link(link_id)
        serializer = LinkItemSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        item = services.payment_link_item_add(
            ctx=RequestContext.from_request(request), link=link, data=serializer.validated_data
        )
        return Response(PaymentLinkItemSerializer(item).data, status=status.HTTP_201_CREATED)


class PaymentLinkItemDetailView(PaymentLinkViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="payment_link_items_delete",
        tags=["Payment links"],
        responses={200: deleted("PaymentLinkItemDeleted"), **ERRORS},
    )
    def delete(self, request, link_id: str, item_id: str):
        link = self.get_link(link_id)
        services.payment_link_item_delete(
            ctx=RequestContext.from_request(request), link=link, item_id=item_id
        )
        return Response({"object": "payment_link_item", "id": item_id, "deleted": True})


class ProductGenerateLinkView(PlatformAPIView):
    @extend_schema(
        operation_id="products_generate_link",
        tags=["Products"],
        request=PaymentLinkWriteSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: PaymentLinkDetailSerializer, **ERRORS},
        description="A payment link from the product; any link field in the body overrides the product's.",
    )
    def post(self, request, product_id: str):
        product = product_get(request, product_id)
        overrides = request.data if isinstance(request.data, dict) else {}
        link = services.product_generate_link(
            ctx=RequestContext.from_request(request), product=product, overrides=overrides
        )
        return Response(PaymentLinkDetailSerializer(link).data, status=status.HTTP_201_CREATED)
