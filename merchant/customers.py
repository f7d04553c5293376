"""Customers of the platform interface, and their streamed export.

A customer is a payer's wallet as the merchant knows it; a completed payment
creates or updates it (checkout.subscribers). Name and email are encrypted at
rest; `search` finds a wallet by part of its address, or a name or email by
its exact (case-insensitive) value through keyed digests.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import serializers

from chains.fields import AddressField
from core import openapi
from core.crypto import blind_index
from core.errors import NOTHING_TO_UPDATE, Conflict, ErrorCode, InvalidRequest
from core.fields import EpochMillisField, StrictCharField, StrictSerializer
from merchant.models import Customer
from merchant.signals import customer_erased
from platform_api.api import PlatformAPIView
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.errors import PlatformError
from platform_api.exports import EXPORT_PARAMETERS, export_format, stream_export
from platform_api.fields import MetadataField
from platform_api.filters import FilterSerializer, TextFilter
from platform_api.models import Organization
from platform_api.resources import Resource, ResourceDetailView, resource_views
from platform_api.signals import record_write
from platform_api.views import ERRORS

SORTS = ("created_at", "updated_at", "total_paid", "transaction_count")


CUSTOMER_EXPORT_LIMIT = 10_000


class CustomerWriteSerializer(StrictSerializer):
    wallet_address = AddressField()
    name = StrictCharField(max_length=200, required=False, allow_blank=True)
    email = serializers.EmailField(max_length=254, required=False, allow_blank=True)
    metadata = MetadataField(required=False)


class CustomerUpdateSerializer(CustomerWriteSerializer):
    an_update = True
    wallet_address = None  # type: ignore[assignment]


class CustomerSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `cust_`.")
    wallet_address = serializers.CharField(help_text="Lower-case.")
    name = serializers.CharField(allow_null=True)
    email = serializers.CharField(allow_null=True)
    metadata = serializers.JSONField()
    total_paid = serializers.DecimalField(max_digits=20, decimal_places=2, help_text="USD.")
    transaction_count = serializers.IntegerField()
    first_payment_at = EpochMillisField(allow_null=True)
    last_payment_at = EpochMillisField(allow_null=True)
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "customer"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["name"], data["email"] = data["name"] or None, data["email"] or None
        return data


def customer_list(*, organization: Organization, search: str | None = None) -> QuerySet[Customer]:
    """`search` finds a wallet by part of its address, or a name or email by its exact value."""
    customers = Customer.objects.filter(organization=organization)
    if search:
        customers = customers.filter(
            Q(wallet_address__icontains=search.lower())
            | Q(email_digest=blind_index(search, purpose="customer-email"))
            | Q(name_digest=blind_index(search, purpose="customer-name"))
        )
    return customers


class CustomerFilters(FilterSerializer):
    search = TextFilter()


def _duplicate(wallet: str) -> Conflict:
    return Conflict(
        f"A customer with wallet {wallet} already exists.", field="wallet_address", code=ErrorCode.UNIQUE
    )


def _audit(ctx: RequestContext, event_type: AuditName, customer_id: str, *, created: bool = False) -> None:
    record_write(
        ctx=ctx,
        event_type=event_type,
        resource_type="customer",
        resource_id=customer_id,
        created=created,
    )


def customer_create(*, ctx: RequestContext, organization: Organization, data: dict[str, Any]) -> Customer:
    wallet = data["wallet_address"].lower()
    try:
        with transaction.atomic():
            customer = Customer.objects.create(
                organization=organization,
                wallet_address=wallet,
                name=data.get("name", ""),
                email=data.get("email", ""),
                metadata=data.get("metadata") or {},
            )
            _audit(ctx, AuditName.CUSTOMER_CREATED, customer.id, created=True)
            return customer
    except IntegrityError:
        raise _duplicate(wallet) from None


@transaction.atomic
def customer_update(*, ctx: RequestContext, customer: Customer, data: dict[str, Any]) -> Customer:
    if not data:
        raise InvalidRequest(NOTHING_TO_UPDATE, code=ErrorCode.NOTHING_TO_UPDATE)
    customer = Customer.objects.select_for_update().get(pk=customer.pk)
    for name in ("name", "email", "metadata"):
        if name in data:
            setattr(customer, name, data[name])
    customer.updated_at = timezone.now()
    customer.save()
    _audit(ctx, AuditName.CUSTOMER_UPDATED, customer.id)
    return customer


@transaction.atomic
def customer_erase(*, ctx: RequestContext, customer: Customer) -> None:
    """Erase the customer's personal data wherever the service keeps it; the wallet and the payments (amounts,
    hashes, dates) stay for the books.

    The customer's name, email and metadata here; through `customer_erased`, the
    checkout erases the email, name, form answers and shipping address of every
    session and transaction of the customer's wallet, and the webhooks the same
    in the events, deliveries and notification emails about those sessions, all
    in this transaction.
    """
    customer = Customer.objects.select_for_update().get(pk=customer.pk)
    customer.name = customer.email = ""
    customer.metadata = {}
    customer.erased_at = customer.updated_at = timezone.now()
    customer.save()
    customer_erased.send(sender=Customer, customer=customer)
    _audit(ctx, AuditName.CUSTOMER_DELETED, customer.id)


class _CustomerDetailView(ResourceDetailView):
    def check_update(self, request):
        if isinstance(request.data, dict) and "wallet_address" in request.data:
            raise PlatformError.invalid_field("wallet_address", "'wallet_address' cannot change.")


CUSTOMERS = Resource(
    object_type="customer",
    operations="customers",
    tag="Customers",
    schema_name="Customer",
    serializer=CustomerSerializer,
    write_serializer=CustomerWriteSerializer,
    update_serializer=CustomerUpdateSerializer,
    rows=Customer.objects.all,
    select=customer_list,
    filters=CustomerFilters,
    sorts=SORTS,
    list_parameters=[
        OpenApiParameter("sort", str, enum=list(SORTS)),
        openapi.text("search", description="Part of the wallet, or the exact name or email."),
    ],
    create=lambda ctx, organization, data: customer_create(ctx=ctx, organization=organization, data=data),
    update=lambda ctx, customer, data: customer_update(ctx=ctx, customer=customer, data=data),
    delete=lambda ctx, customer: customer_erase(ctx=ctx, customer=customer),
    delete_description="Erases the name, email and metadata; the wallet's payments stay.",
)
CustomerCollectionView, CustomerDetailView = resource_views(CUSTOMERS, detail=_CustomerDetailView)


def customer_paid(
    *, organization_id: str, wallet: str, name: str, email: str, usd: Decimal, now: datetime
) -> Customer | None:
    """The payer's customer (by wallet) gains one completed payment of `usd`; a first payment creates it.
    Call it in the transaction that completes the payment."""
    wallet = (wallet or "").lower()
    if not wallet:
        return None
    email = (email or "")[:254]
    customer, created = Customer.objects.get_or_create(
        organization_id=organization_id,
        wallet_address=wallet,
        defaults={"name": name, "email": email, "first_payment_at": now},
    )
    Customer.objects.filter(pk=customer.pk).update(
        total_paid=F("total_paid") + usd,
        transaction_count=F("transaction_count") + 1,
        last_payment_at=now,
        updated_at=now,
    )
    # A repeat payer's newest name and email are recorded: what they typed last is how to reach them now (an
    # erased customer stays erased; a payment without them keeps what was known).
    newer = {
        field: value
        for field, value in (("name", name), ("email", email))
        if value and value != getattr(customer, field)
    }
    if not created and customer.erased_at is None and newer:
        for field, value in newer.items():
            setattr(customer, field, value)
        customer.save(update_fields=list(newer))
    return customer


def customer_get(request, customer_id: str) -> Customer:
    return CUSTOMERS.get(request, customer_id)


class CustomerExportView(PlatformAPIView):
    @extend_schema(
        operation_id="customers_export",
        tags=["Customers"],
        parameters=EXPORT_PARAMETERS,
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): CustomerSerializer(many=True),
            **ERRORS,
        },
        description="At most 10,000 customers, newest first, streamed.",
    )
    def get(self, request):
        fmt = export_format(request)
        rows = Customer.objects.filter(organization=request.auth.organization).order_by("-created_at", "-pk")
        data = (CustomerSerializer(c).data for c in rows[:CUSTOMER_EXPORT_LIMIT].iterator(chunk_size=500))
        return stream_export(data, fmt=fmt, filename="customers", fields=list(CustomerSerializer().fields))
