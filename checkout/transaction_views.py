"""The transactions that paid links and sessions: list (with filters), one, stats, a customer's, and the
streamed export. Views parse, call, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from checkout import selectors
from checkout.filters import TransactionFilters
from checkout.models import Transaction
from checkout.serializers import TransactionSerializer
from core import openapi
from merchant.api import customer_get
from platform_api.api import PlatformAPIView, list_of, render_list
from platform_api.exports import EXPORT_PARAMETERS, export_format, stream_export
from platform_api.inputs import MAX_MILLIS
from platform_api.views import ERRORS, LIST_PARAMETERS

TRANSACTION_SORTS = ("created_at", "updated_at", "completed_at")


class TransactionCollectionView(PlatformAPIView):
    @extend_schema(
        operation_id="transactions_list",
        tags=["Transactions"],
        parameters=[
            *LIST_PARAMETERS,
            OpenApiParameter("sort", str, enum=list(TRANSACTION_SORTS), description="Default created_at."),
            OpenApiParameter("status", str, enum=["pending", "confirming", "completed", "failed"]),
            openapi.integer(
                "chain_id", minimum=1, maximum=10**18 - 1, description="Where the merchant is paid."
            ),
            openapi.text("customer_id", max_length=64),
            openapi.text("payment_link_id", max_length=64),
            openapi.integer(
                "from", minimum=0, maximum=MAX_MILLIS, description="Created at or after (ms since the epoch)."
            ),
            openapi.integer(
                "to", minimum=0, maximum=MAX_MILLIS, description="Created at or before (ms since the epoch)."
            ),
        ],
        responses={200: list_of("TransactionList", TransactionSerializer(many=True)), **ERRORS},
    )
    def get(self, request):
        filters = TransactionFilters.filters(request.query_params)
        rows = selectors.transaction_list(organization=request.auth.organization, **filters)
        return render_list(request, rows, TransactionSerializer, TRANSACTION_SORTS)


class TransactionDetailView(PlatformAPIView):
    @extend_schema(
        operation_id="transactions_retrieve",
        tags=["Transactions"],
        responses={200: TransactionSerializer, **ERRORS},
    )
    def get(self, request, transaction_id: str):
        row = selectors.transaction_get(organization=request.auth.organization, transaction_id=transaction_id)
        return Response(TransactionSerializer(row).data)


class TransactionStatsView(PlatformAPIView):
    @extend_schema(
        operation_id="transactions_stats",
        tags=["Transactions"],
        responses={
            200: inline_serializer(
                "TransactionStats",
                {
                    "object": serializers.CharField(),
                    "total_transactions": serializers.IntegerField(),
                    "completed_transactions": serializers.IntegerField(),
                    "failed_transactions": serializers.IntegerField(),
                    "pending_transactions": serializers.IntegerField(),
                    "total_volume_usd": serializers.CharField(),
                    "last_24h": inline_serializer(
                        "TransactionStatsDay",
                        {
                            "transactions": serializers.IntegerField(),
                            "completed": serializers.IntegerField(),
                            "volume_usd": serializers.CharField(),
                        },
                    ),
                    "status_breakdown": inline_serializer(
                        "TransactionStatusBreakdown",
                        {status: serializers.IntegerField() for status in Transaction.Status.values},
                    ),
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request):
        return Response(selectors.transaction_stats(organization=request.auth.organization))


class CustomerTransactionsView(PlatformAPIView):
    @extend_schema(
        operation_id="customers_transactions",
        tags=["Customers"],
        parameters=LIST_PARAMETERS,
        responses={200: list_of("CustomerTransactionList", TransactionSerializer(many=True)), **ERRORS},
    )
    def get(self, request, customer_id: str):
        customer = customer_get(request, customer_id)
        return render_list(request, customer.transactions.all(), TransactionSerializer, TRANSACTION_SORTS)


class TransactionExportView(PlatformAPIView):
    @extend_schema(
        operation_id="transactions_export",
        tags=["Transactions"],
        parameters=EXPORT_PARAMETERS,
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): TransactionSerializer(many=True),
            **ERRORS,
        },
        description="At most 50,000 transactions (the list's filters apply), newest first, streamed.",
    )
    def get(self, request):
        fmt = export_format(request)
        filters = TransactionFilters.filters(request.query_params)
        rows = selectors.transaction_list(organization=request.auth.organization, **filters)
        rows = rows.order_by("-created_at", "-pk")[:TRANSACTION_EXPORT_LIMIT]
        data = (TransactionSerializer(t).data for t in rows.iterator(chunk_size=1000))
        return stream_export(
            data, fmt=fmt, filename="transactions", fields=list(TransactionSerializer().fields)
        )


TRANSACTION_EXPORT_LIMIT = 50_000
