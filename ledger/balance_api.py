"""`/api/v1/balance-transactions`: the organization's payments, refunds and adjustments with gross, fee and
net (ledger.models.BalanceTransaction), listed with filters, one by id, and exported as CSV or JSON.

Amounts are signed decimal strings in the token's base units (a refund is negative) and, beside them,
formatted in whole tokens with the symbol where the token is in the registry."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from chains.evm import ADDRESS_PATTERN, is_address
from chains.tokens import tokens_by_chain_and_address
from core import openapi
from core.errors import NotFound
from core.fields import EpochMillisField
from ledger.models import BalanceTransaction
from platform_api.api import PlatformAPIView, list_of, render_list
from platform_api.exports import EXPORT_PARAMETERS, export_format, stream_export
from platform_api.filters import (
    ChoiceFilter,
    FilterSerializer,
    IdFilter,
    MillisFilter,
    QueryField,
    WholeNumberFilter,
)
from platform_api.inputs import MAX_MILLIS
from platform_api.views import ERRORS, LIST_PARAMETERS

SORTS = ("created_at",)
EXPORT_LIMIT = 50_000
SIGNED = {"type": "string", "pattern": "^-?[0-9]+$", "example": "-4000000"}


class AddressFilter(QueryField):
    def to_internal_value(self, data: Any) -> str:
        if not is_address(data):
            self.refuse("must be an address: 0x and 40 hexadecimal characters.")
        return str(data).lower()


class BalanceTransactionFilters(FilterSerializer):
    type = ChoiceFilter(BalanceTransaction.Type.values)
    chain_id = WholeNumberFilter()
    token_address = AddressFilter()
    source_id = IdFilter()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["created[gte]"] = MillisFilter(source="created_from")
        fields["created[lte]"] = MillisFilter(source="created_to")
        return fields


def balance_transaction_list(
    *,
    organization_id: str,
    type: str | None = None,
    chain_id: int | None = None,
    token_address: str | None = None,
    source_id: str | None = None,
    created_from=None,
    created_to=None,
):
    rows = BalanceTransaction.objects.filter(organization_id=organization_id)
    if type:
        rows = rows.filter(type=type)
    if chain_id is not None:
        rows = rows.filter(chain_id=chain_id)
    if token_address:
        rows = rows.filter(token_address__iexact=token_address)
    if source_id:
        rows = rows.filter(source_id=source_id)
    if created_from is not None:
        rows = rows.filter(created_at__gte=created_from)
    if created_to is not None:
        rows = rows.filter(created_at__lte=created_to)
    return rows


def _formatted(amount: int, token) -> str | None:
    if token is None:
        return None
    whole = Decimal(amount).scaleb(-token.decimals).normalize()
    return f"{whole:f} {token.symbol}" if whole else f"0 {token.symbol}"


class TxHashSerializer(serializers.Serializer):
    role = serializers.CharField(help_text="deposit, delivery, execution or refund.")
    chain_id = serializers.IntegerField()
    tx_hash = serializers.CharField()


class BalanceTransactionListSerializer(serializers.ListSerializer):
    """Reads the page's tokens (symbol, decimals) in one query."""

    def to_representation(self, data):
        rows = list(data.all() if hasattr(data, "all") else data)
        self.child.context["tokens"] = tokens_by_chain_and_address(
            list({(row.chain_id, row.token_address) for row in rows})
        )
        return [self.child.to_representation(row) for row in rows]


class BalanceTransactionSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `btxn_`.")
    type = serializers.ChoiceField(choices=BalanceTransaction.Type.choices)
    amount = serializers.SerializerMethodField(help_text="Gross, signed: a refund is negative.")
    fee = serializers.SerializerMethodField(help_text="The service's fee (payments), signed.")
    net = serializers.SerializerMethodField(help_text="What the organization's balance moved by, signed.")
    amount_formatted = serializers.SerializerMethodField()
    fee_formatted = serializers.SerializerMethodField()
    net_formatted = serializers.SerializerMethodField()
    chain_id = serializers.IntegerField()
    token_address = serializers.CharField()
    token_symbol = serializers.SerializerMethodField()
    token_decimals = serializers.SerializerMethodField()
    source_id = serializers.CharField(help_text="The transaction (txn_) or quick payment it is about.")
    order_id = serializers.CharField(allow_null=True)
    payment_link_id = serializers.CharField(allow_null=True)
    session_id = serializers.CharField(allow_null=True)
    transaction_id = serializers.CharField(allow_null=True)
    tx_hashes = TxHashSerializer(many=True)
    description = serializers.CharField()
    created_at = EpochMillisField()

    class Meta:
        list_serializer_class = BalanceTransactionListSerializer

    def _token(self, row: BalanceTransaction):
        """The row's token: from the page's (read once by the list), else read now and kept in the context
        (the export serializes row by row with one context)."""
        tokens = self.context.setdefault("tokens", {})
        where = (row.chain_id, row.token_address.lower())
        if where not in tokens:
            tokens.update(tokens_by_chain_and_address([(row.chain_id, row.token_address)]))
            tokens.setdefault(where, None)
        return tokens[where]

    def get_object(self, _row) -> str:
        return "balance_transaction"

    def _signed(self, row: BalanceTransaction, value: int) -> int:
        return row.sign * value

    @extend_schema_field(SIGNED)
    def get_amount(self, row: BalanceTransaction) -> str:
        return str(self._signed(row, row.gross))

    @extend_schema_field(SIGNED)
    def get_fee(self, row: BalanceTransaction) -> str:
        return str(self._signed(row, row.fee))

    @extend_schema_field(SIGNED)
    def get_net(self, row: BalanceTransaction) -> str:
        return str(self._signed(row, row.net))

    def get_amount_formatted(self, row: BalanceTransaction) -> str | None:
        return _formatted(self._signed(row, row.gross), self._token(row))

    def get_fee_formatted(self, row: BalanceTransaction) -> str | None:
        return _formatted(self._signed(row, row.fee), self._token(row))

    def get_net_formatted(self, row: BalanceTransaction) -> str | None:
        return _formatted(self._signed(row, row.net), self._token(row))

    def get_token_symbol(self, row: BalanceTransaction) -> str | None:
        token = self._token(row)
        return token.symbol if token else None

    def get_token_decimals(self, row: BalanceTransaction) -> int | None:
        token = self._token(row)
        return token.decimals if token else None

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for field in ("order_id", "payment_link_id", "session_id", "transaction_id"):
            data[field] = data[field] or None
        return data


PARAMETERS = [
    OpenApiParameter("type", str, enum=BalanceTransaction.Type.values),
    openapi.integer("chain_id", minimum=1, maximum=10**18 - 1, description="The row's chain."),
    OpenApiParameter("token_address", str, pattern=ADDRESS_PATTERN, description="The row's token."),
    openapi.text("source_id", max_length=64),
    openapi.integer(
        "created[gte]", minimum=0, maximum=MAX_MILLIS, description="Created at or after (ms since the epoch)."
    ),
    openapi.integer(
        "created[lte]",
        minimum=0,
        maximum=MAX_MILLIS,
        description="Created at or before (ms since the epoch).",
    ),
]


def _rows(request):
    filters = BalanceTransactionFilters.filters(request.query_params)
    return balance_transaction_list(organization_id=request.auth.organization.pk, **filters)


class BalanceTransactionCollectionView(PlatformAPIView):
    @extend_schema(
        operation_id="balance_transactions_list",
        tags=["Balance transactions"],
        parameters=[*LIST_PARAMETERS, *PARAMETERS],
        responses={
            200: list_of("BalanceTransactionList", BalanceTransactionSerializer(many=True)),
            **ERRORS,
        },
        description="The organization's payments, refunds and adjustments, newest first by default.",
    )
    def get(self, request):
        return render_list(request, _rows(request), BalanceTransactionSerializer, SORTS)


class BalanceTransactionDetailView(PlatformAPIView):
    @extend_schema(
        operation_id="balance_transactions_retrieve",
        tags=["Balance transactions"],
        responses={200: BalanceTransactionSerializer, **ERRORS},
    )
    def get(self, request, balance_transaction_id: str):
        row = BalanceTransaction.objects.filter(
            organization_id=request.auth.organization.pk, pk=balance_transaction_id
        ).first()
        if row is None:
            raise NotFound(f"No balance_transaction with id '{balance_transaction_id}'.")
        return Response(BalanceTransactionSerializer(row).data)


class BalanceTransactionExportView(PlatformAPIView):
    @extend_schema(
        operation_id="balance_transactions_export",
        tags=["Balance transactions"],
        parameters=[*EXPORT_PARAMETERS, *PARAMETERS],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): BalanceTransactionSerializer(many=True),
            **ERRORS,
        },
        description="At most 50,000 rows (the list's filters apply), newest first, streamed.",
    )
    def get(self, request):
        fmt = export_format(request)
        rows = _rows(request).order_by("-created_at", "-pk")[:EXPORT_LIMIT]
        context: dict[str, Any] = {}

        def data():
            for row in rows.iterator(chunk_size=1000):
                item = dict(BalanceTransactionSerializer(row, context=context).data)
                if fmt == "csv":
                    item["tx_hashes"] = " ".join(
                        f"{h['role']}:{h['chain_id']}:{h['tx_hash']}" for h in item["tx_hashes"]
                    )
                yield item

        return stream_export(
            data(),
            fmt=fmt,
            filename="balance-transactions",
            fields=list(BalanceTransactionSerializer().fields),
        )
