"""Products (the merchant's catalogue, archived on delete, made into payment links) and the organization's
settings, whose defaults fill links and products created without a token, chain or recipient."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from chains.fields import AddressField, SupportedChainIdField, TokenAmountField
from core import openapi
from core.fields import EpochMillisField, StrictCharField
from platform_api import merchant_services
from platform_api.api import PlatformAPIView
from platform_api.context import RequestContext
from platform_api.errors import PlatformError
from platform_api.merchant_selectors import parse_bool
from platform_api.merchant_serializers import (
    FormSchemaSerializer,
    MetadataField,
    PaymentLinkDetailSerializer,
    PaymentLinkWriteSerializer,
    ShippingOptionSerializer,
    https_url_field,
)
from platform_api.merchant_views import deleted, list_of, render_list
from platform_api.models import Organization, Permission, Product
from platform_api.selectors import scoped_get
from platform_api.signals import record_write
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER, LIST_PARAMETERS

PRODUCT_SORTS = ("created_at", "updated_at", "name")
PRODUCT_FIELDS = (
    "name",
    "description",
    "product_type",
    "amount",
    "token_address",
    "chain_id",
    "recipient_address",
    "image_url",
    "metadata",
    "form_schema",
    "shipping_options",
)


class ProductWriteSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100)
    amount = TokenAmountField(required=False, allow_null=True)
    product_type = serializers.ChoiceField(choices=Product.Type.values, required=False)
    token_address = AddressField(required=False)
    chain_id = SupportedChainIdField(required=False)
    recipient_address = AddressField(required=False)
    description = StrictCharField(max_length=500, required=False, allow_blank=True)
    image_url = https_url_field(required=False, allow_blank=True)
    metadata = MetadataField(required=False)
    form_schema = FormSchemaSerializer(required=False)
    shipping_options = ShippingOptionSerializer(many=True, required=False, max_length=20)


class ProductSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `prod_`.")
    name = serializers.CharField()
    description = serializers.CharField()
    product_type = serializers.CharField(help_text="one_time or variable.")
    amount = TokenAmountField(allow_null=True)
    token_address = serializers.CharField()
    chain_id = serializers.IntegerField()
    recipient_address = serializers.CharField()
    image_url = serializers.CharField()
    metadata = serializers.JSONField()
    form_schema = serializers.JSONField()
    shipping_options = serializers.JSONField()
    is_active = serializers.BooleanField(help_text="False once archived.")
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "product"


class OrganizationSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField()
    slug = serializers.CharField(help_text="Read-only.")
    name = serializers.CharField()
    description = serializers.CharField()
    logo_url = serializers.CharField()
    website_url = serializers.CharField()
    redirect_domains = serializers.ListField(
        child=serializers.CharField(),
        help_text="Hosts (and their subdomains) that `success_url` and `cancel_url` in a payment link's page "
        "address may name; the website's host is allowed too. Any other is ignored.",
    )
    contact_email = serializers.CharField()
    default_recipient_address = serializers.CharField(allow_null=True)
    default_chain_id = serializers.IntegerField(allow_null=True)
    default_token_address = serializers.CharField(allow_null=True)
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "organization"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for name in ("default_recipient_address", "default_token_address"):
            data[name] = data[name] or None
        return data


HOST_NAME = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}|localhost")


class OrganizationUpdateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=200, required=False)
    description = StrictCharField(max_length=500, required=False, allow_blank=True)
    logo_url = https_url_field(required=False, allow_blank=True)
    website_url = https_url_field(required=False, allow_blank=True)
    redirect_domains = serializers.ListField(
        child=StrictCharField(max_length=253),
        required=False,
        max_length=20,
        help_text="Host names such as `shop.example` (subdomains included), at most 20.",
    )
    contact_email = serializers.EmailField(max_length=254, required=False, allow_blank=True)
    default_recipient_address = AddressField(required=False, allow_null=True)
    default_chain_id = SupportedChainIdField(required=False, allow_null=True)
    default_token_address = AddressField(required=False, allow_null=True)

    def validate_redirect_domains(self, value: list[str]) -> list[str]:
        hosts = []
        for host in value:
            host = host.strip().lower().rstrip(".")
            if not HOST_NAME.fullmatch(host):
                raise serializers.ValidationError(f"{host!r} is not a host name (such as shop.example).")
            if host not in hosts:
                hosts.append(host)
        return hosts


# --- services -------------------------------------------------------------------------------


def _product_values(data: dict[str, Any]) -> dict[str, Any]:
    return merchant_services.stored_values(data, PRODUCT_FIELDS)


def _check_product(values: dict[str, Any]) -> None:
    if values.get("product_type", Product.Type.ONE_TIME) == Product.Type.VARIABLE:
        if values.get("amount") is not None:
            raise PlatformError.invalid_field(
                "amount", "'amount': a variable product's price is the payer's."
            )
    elif values.get("amount") is None:
        raise PlatformError.missing_field(
            "amount", "The field 'amount' is required unless 'product_type' is variable."
        )
    merchant_services.check_token(values["chain_id"], values["token_address"])
    merchant_services.check_amounts_worth(
        values["chain_id"], values["token_address"], {"amount": values.get("amount")}
    )


@transaction.atomic
def product_create(*, ctx: RequestContext, organization: Organization, data: dict[str, Any]) -> Product:
    values = merchant_services.fill_defaults(organization, _product_values(data))
    _check_product(values)
    product = Product.objects.create(organization=organization, **values)
    record_write(
        ctx=ctx,
        event_type="product.created",
        resource_type="product",
        resource_id=product.id,
        status_code=201,
    )
    return product


@transaction.atomic
def product_update(*, ctx: RequestContext, product: Product, data: dict[str, Any]) -> Product:
    if not data:
        raise PlatformError.no_updates()
    product = Product.objects.select_for_update().get(pk=product.pk)
    values = _product_values(data)
    if values.get("product_type") == Product.Type.VARIABLE and "amount" not in values:
        values["amount"] = None
    _check_product({name: getattr(product, name) for name in PRODUCT_FIELDS} | values)
    for name, value in values.items():
        setattr(product, name, value)
    product.updated_at = timezone.now()
    product.save()
    record_write(
        ctx=ctx,
        event_type="product.updated",
        resource_type="product",
        resource_id=product.id,
        status_code=200,
    )
    return product


@transaction.atomic
def product_archive(*, ctx: RequestContext, product: Product) -> None:
    """Hidden from the default list and from new links; links made from it keep working."""
    Product.objects.filter(pk=product.pk).update(is_active=False, updated_at=timezone.now())
    record_write(
        ctx=ctx,
        event_type="product.deleted",
        resource_type="product",
        resource_id=product.id,
        status_code=200,
    )


@transaction.atomic
def product_generate_link(*, ctx: RequestContext, product: Product, overrides: dict[str, Any]):
    """A payment link with the product's name, price, token, chain, recipient, image, form and shipping."""
    if not product.is_active:
        raise PlatformError.invalid_transition(f"product {product.id} is archived; it makes no new links.")
    data = {
        name: getattr(product, name)
        for name in (
            "name",
            "description",
            "amount",
            "token_address",
            "chain_id",
            "recipient_address",
            "image_url",
        )
    }
    data |= {
        "product_id": product.id,
        "form_schema": product.form_schema,
        "shipping_options": product.shipping_options,
    }
    serializer = PaymentLinkWriteSerializer(data={**_as_input(data), **overrides})
    serializer.is_valid(raise_exception=True)
    return merchant_services.payment_link_create(
        ctx=ctx, organization=product.organization, data=serializer.validated_data
    )


def _as_input(data: dict[str, Any]) -> dict[str, Any]:
    """Stored values as the link's API takes them (amounts as strings, no empty optional fields)."""
    result = {key: value for key, value in data.items() if value not in (None, "")}
    if "amount" in result:
        result["amount"] = str(result["amount"])
    if not (result.get("form_schema") or {}).get("fields"):
        result.pop("form_schema", None)
    return result


@transaction.atomic
def organization_update(
    *, ctx: RequestContext, organization: Organization, data: dict[str, Any]
) -> Organization:
    if not data:
        raise PlatformError.no_updates()
    organization = Organization.objects.select_for_update().get(pk=organization.pk)
    for name, value in data.items():
        setattr(organization, name, value if value is not None or name == "default_chain_id" else "")
    chain, token = organization.default_chain_id, organization.default_token_address
    if token and chain is None:
        raise PlatformError.invalid_field(
            "default_chain_id", "'default_chain_id': a default token needs its chain."
        )
    if token and chain is not None:
        merchant_services.check_token(chain, token, param="default_token_address")
    organization.updated_at = timezone.now()
    organization.save()
    record_write(
        ctx=ctx,
        event_type="organization.updated",
        resource_type="organization",
        resource_id=organization.id,
        status_code=200,
    )
    return organization


# --- views ------------------------------------------------------------------------------------------


def product_list(*, organization: Organization, query):
    """Active products by default; `active=false` lists the archived ones."""
    products = Product.objects.filter(
        organization=organization, is_active=parse_bool(query, "active") is not False
    )
    if query.get("search"):
        products = products.filter(name__icontains=query["search"].strip())
    if query.get("product_type"):
        if query["product_type"] not in Product.Type.values:
            raise PlatformError.invalid_field("product_type", "'product_type' must be one_time or variable.")
        products = products.filter(product_type=query["product_type"])
    return products


def _product(request, product_id: str) -> Product:
    return scoped_get(
        Product.objects.all(),
        organization=request.auth.organization,
        resource_type="product",
        resource_id=product_id,
    )


class ProductCollectionView(PlatformAPIView):
    @extend_schema(
        operation_id="products_list",
        tags=["Products"],
        parameters=[
            *LIST_PARAMETERS,
            OpenApiParameter("sort", str, enum=list(PRODUCT_SORTS)),
            openapi.text("search", description="Part of the name."),
            OpenApiParameter(
                "active",
                str,
                enum=["true", "false"],
                description="Default true: archived products only with false.",
            ),
            OpenApiParameter("product_type", str, enum=Product.Type.values),
        ],
        responses={200: list_of("ProductList", ProductSerializer(many=True)), **ERRORS},
    )
    def get(self, request):
        products = product_list(organization=request.auth.organization, query=request.query_params)
        return render_list(request, products, ProductSerializer, PRODUCT_SORTS)

    @extend_schema(
        operation_id="products_create",
        tags=["Products"],
        request=ProductWriteSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: ProductSerializer, **ERRORS},
    )
    def post(self, request):
        serializer = ProductWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        product = product_create(
            ctx=RequestContext.from_request(request),
            organization=request.auth.organization,
            data=serializer.validated_data,
        )
        return Response(ProductSerializer(product).data, status=status.HTTP_201_CREATED)


class ProductDetailView(PlatformAPIView):
    @extend_schema(
        operation_id="products_retrieve", tags=["Products"], responses={200: ProductSerializer, **ERRORS}
    )
    def get(self, request, product_id: str):
        return Response(ProductSerializer(_product(request, product_id)).data)

    @extend_schema(
        operation_id="products_update",
        tags=["Products"],
        request=ProductWriteSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={200: ProductSerializer, **ERRORS},
    )
    def patch(self, request, product_id: str):
        product = _product(request, product_id)
        serializer = ProductWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        product = product_update(
            ctx=RequestContext.from_request(request), product=product, data=serializer.validated_data
        )
        return Response(ProductSerializer(product).data)

    @extend_schema(
        operation_id="products_delete",
        tags=["Products"],
        responses={200: deleted("ProductDeleted"), **ERRORS},
        description="Archives the product: hidden from the default list; its links keep working.",
    )
    def delete(self, request, product_id: str):
        product = _product(request, product_id)
        product_archive(ctx=RequestContext.from_request(request), product=product)
        return Response({"object": "product", "id": product.id, "deleted": True})


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
        product = _product(request, product_id)
        overrides = request.data if isinstance(request.data, dict) else {}
        link = product_generate_link(
            ctx=RequestContext.from_request(request), product=product, overrides=overrides
        )
        return Response(PaymentLinkDetailSerializer(link).data, status=status.HTTP_201_CREATED)


class OrganizationView(PlatformAPIView):
    permissions_by_method = {"PATCH": Permission.ADMIN}

    @extend_schema(
        operation_id="organization_retrieve",
        tags=["Organization"],
        responses={200: OrganizationSerializer, **ERRORS},
    )
    def get(self, request):
        return Response(OrganizationSerializer(request.auth.organization).data)

    @extend_schema(
        operation_id="organization_update",
        tags=["Organization"],
        request=OrganizationUpdateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={200: OrganizationSerializer, **ERRORS},
    )
    def patch(self, request):
        if isinstance(request.data, dict) and "slug" in request.data:
            raise PlatformError.invalid_field("slug", "'slug' is read-only.")
        serializer = OrganizationUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        organization = organization_update(
            ctx=RequestContext.from_request(request),
            organization=request.auth.organization,
            data=serializer.validated_data,
        )
        return Response(OrganizationSerializer(organization).data)
