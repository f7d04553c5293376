"""Refunds on the platform interface: create (201, `Idempotency-Key`), list, one, cancel; the refund balance.
Views parse, call, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from core import openapi
from platform_api.api import PlatformAPIView, list_of, render_list
from platform_api.context import RequestContext
from platform_api.filters import ChoiceFilter, CreatedWindowFilters, IdFilter
from platform_api.inputs import MAX_MILLIS
from platform_api.models import Permission
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER, LIST_PARAMETERS
from refunds import selectors, services
from refunds.models import Refund
from refunds.serializers import (
    RefundBalanceSerializer,
    RefundCreateSerializer,
    RefundSerializer,
    TopUpCreateSerializer,
    TopUpSerializer,
)

SORTS = ("created_at", "updated_at")
TAGS = ["Refunds"]
FUNDED_BY_MERCHANT = (
    "A refund is funded by the merchant (the service holds nothing of theirs): from the refund balance when it "
    "covers the amount (`funding.method` `balance`, status `pending` at once), else by a deposit of the amount "
    "to the refund's own address (`funding.address`) before `funding.expires_at`. The service's fee is not "
    "returned."
)


class RefundFilters(CreatedWindowFilters):
    status = ChoiceFilter(Refund.Status.values)
    transaction = IdFilter()


class RefundCollectionView(PlatformAPIView):
    permissions_by_method = {"POST": Permission.WRITE}

    @extend_schema(
        operation_id="refunds_list",
        tags=TAGS,
        parameters=[
            *LIST_PARAMETERS,
            OpenApiParameter("sort", str, enum=list(SORTS), description="Default created_at."),
            OpenApiParameter("status", str, enum=Refund.Status.values),
            openapi.text("transaction", max_length=64, description="The refunded payment (`txn_…`, `qp_…`)."),
            openapi.integer("from", minimum=0, maximum=MAX_MILLIS, description="Created at or after (ms)."),
            openapi.integer("to", minimum=0, maximum=MAX_MILLIS, description="Created at or before (ms)."),
        ],
        responses={200: list_of("RefundList", RefundSerializer(many=True)), **ERRORS},
    )
    def get(self, request):
        filters = RefundFilters.filters(request.query_params)
        rows = selectors.refund_list(organization=request.auth.organization, **filters)
        return render_list(request, rows, RefundSerializer, SORTS)

    @extend_schema(
        operation_id="refunds_create",
        tags=TAGS,
        request=RefundCreateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: RefundSerializer, **ERRORS},
        description=FUNDED_BY_MERCHANT,
    )
    def post(self, request):
        serializer = RefundCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        refund = services.refund_create(
            ctx=RequestContext.from_request(request),
            organization=request.auth.organization,
            data=serializer.validated_data,
        )
        return Response(RefundSerializer(refund).data, status=status.HTTP_201_CREATED)


class RefundDetailView(PlatformAPIView):
    @extend_schema(operation_id="refunds_retrieve", tags=TAGS, responses={200: RefundSerializer, **ERRORS})
    def get(self, request, refund_id: str):
        refund = selectors.refund_get(organization=request.auth.organization, refund_id=refund_id)
        return Response(RefundSerializer(refund).data)


class RefundCancelView(PlatformAPIView):
    permissions_by_method = {"POST": Permission.WRITE}

    @extend_schema(
        operation_id="refunds_cancel",
        tags=TAGS,
        request=None,
        parameters=[IDEMPOTENCY_HEADER],
        responses={200: RefundSerializer, **ERRORS},
        description="Only a refund awaiting its funding (`requires_funding`); any other is 400 "
        "`invalid_status_transition`. What part of its funding arrived goes back to its senders.",
    )
    def post(self, request, refund_id: str):
        refund = selectors.refund_get(organization=request.auth.organization, refund_id=refund_id)
        refund = services.refund_cancel(ctx=RequestContext.from_request(request), refund=refund)
        return Response(RefundSerializer(refund).data)


class RefundBalanceView(PlatformAPIView):
    @extend_schema(
        operation_id="refund_balance_retrieve",
        tags=TAGS,
        responses={
            200: inline_serializer(
                "RefundBalances",
                {"object": serializers.CharField(), "data": RefundBalanceSerializer(many=True)},
            ),
            **ERRORS,
        },
        description="What the organization holds with the service to fund refunds, per chain and token.",
    )
    def get(self, request):
        rows = selectors.refund_balances(organization=request.auth.organization)
        return Response({"object": "refund_balance", "data": RefundBalanceSerializer(rows, many=True).data})


class RefundTopUpView(PlatformAPIView):
    @extend_schema(
        operation_id="refund_balance_top_ups_create",
        tags=TAGS,
        request=TopUpCreateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: TopUpSerializer, **ERRORS},
        description="A deposit address for topping up the refund balance in one token on one chain: what "
        "arrives there in that token within 24 hours is credited once the vault holds it (a `refund_balance` "
        "balance transaction); another token, or a late deposit, goes back to its sender.",
    )
    def post(self, request):
        serializer = TopUpCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        top_up = services.refund_top_up_create(
            ctx=RequestContext.from_request(request),
            organization=request.auth.organization,
            **serializer.validated_data,
        )
        return Response(TopUpSerializer(top_up).data, status=status.HTTP_201_CREATED)
