"""Products: the merchant's catalogue, archived on delete; the checkout makes payment links of them
(`POST /products/{id}/generate-link`) and checks the products its links name (`check_product`)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from chains.fields import AddressField, SupportedChainIdField, TokenAmountField
from core import openapi
from core.errors import NOTHING_TO_UPDATE, ErrorCode, InvalidRequest
from core.fields import EpochMillisField, StrictCharField, StrictSerializer
from merchant.models import Product
from merchant.organization import fill_defaults
from merchant.serializers import FormSchemaSerializer, ShippingOptionSerializer
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.fields import MetadataField, https_url_field
from platform_api.filters import BoolFilter, ChoiceFilter, FilterSerializer, TextFilter
from platform_api.inputs import check_amounts_worth, check_token, stored_values
from platform_api.models import Organization
from platform_api.resources import Resource, resource_views
from platform_api.signals import record_write

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


class ProductWriteSerializer(StrictSerializer):
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


def _product_values(data: dict[str, Any]) -> dict[str, Any]:
    return stored_values(data, PRODUCT_FIELDS)


def _check_product(values: dict[str, Any]) -> None:
    if values.get("product_type", Product.Type.ONE_TIME) == Product.Type.VARIABLE:
        if values.get("amount") is not None:
            raise InvalidRequest("'amount': a variable product's price is the payer's.", field="amount")
    elif values.get("amount") is None:
        raise InvalidRequest(
            "The field 'amount' is required unless 'product_type' is variable.",
            field="amount",
            code=ErrorCode.REQUIRED,
        )
    check_token(values["chain_id"], values["token_address"])
    check_amounts_worth(values["chain_id"], values["token_address"], {"amount": values.get("amount")})


@transaction.atomic
def product_create(*, ctx: RequestContext, organization: Organization, data: dict[str, Any]) -> Product:
    values = fill_defaults(organization, _product_values(data))
    _check_product(values)
    product = Product.objects.create(organization=organization, **values)
    record_write(
        ctx=ctx,
        event_type=AuditName.PRODUCT_CREATED,
        resource_type="product",
        resource_id=product.id,
        created=True,
    )
    return product


@transaction.atomic
def product_update(*, ctx: RequestContext, product: Product, data: dict[str, Any]) -> Product:
    if not data:
        raise InvalidRequest(NOTHING_TO_UPDATE, code=ErrorCode.NOTHING_TO_UPDATE)
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
        event_type=AuditName.PRODUCT_UPDATED,
        resource_type="product",
        resource_id=product.id,
    )
    return product


@transaction.atomic
def product_archive(*, ctx: RequestContext, product: Product) -> None:
    """Hidden from the default list and from new links; links made from it keep working."""
    Product.objects.filter(pk=product.pk).update(is_active=False, updated_at=timezone.now())
    record_write(
        ctx=ctx,
        event_type=AuditName.PRODUCT_DELETED,
        resource_type="product",
        resource_id=product.id,
    )


def product_list(
    *,
    organization: Organization,
    active: bool | None = None,
    search: str | None = None,
    product_type: str | None = None,
):
    """Active products by default; `active=false` lists the archived ones."""
    products = Product.objects.filter(organization=organization, is_active=active is not False)
    if search:
        products = products.filter(name__icontains=search)
    if product_type:
        products = products.filter(product_type=product_type)
    return products


class ProductFilters(FilterSerializer):
    active = BoolFilter()
    search = TextFilter()
    product_type = ChoiceFilter(Product.Type.values, refusal="must be one_time or variable.")


PRODUCTS = Resource(
    object_type="product",
    operations="products",
    tag="Products",
    schema_name="Product",
    serializer=ProductSerializer,
    write_serializer=ProductWriteSerializer,
    rows=Product.objects.all,
    select=product_list,
    filters=ProductFilters,
    sorts=PRODUCT_SORTS,
    list_parameters=[
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
    create=lambda ctx, organization, data: product_create(ctx=ctx, organization=organization, data=data),
    update=lambda ctx, product, data: product_update(ctx=ctx, product=product, data=data),
    delete=lambda ctx, product: product_archive(ctx=ctx, product=product),
    delete_description="Archives the product: hidden from the default list; its links keep working.",
)
ProductCollectionView, ProductDetailView = resource_views(PRODUCTS)


def product_get(request, product_id: str) -> Product:
    return PRODUCTS.get(request, product_id)


def check_product(organization: Organization, product_id: str | None, param: str = "product_id") -> None:
    """A link (or item, or session) may name one of the organization's products, archived or not."""
    if product_id and not Product.objects.filter(organization=organization, pk=product_id).exists():
        raise InvalidRequest(f"'{param}': no product {product_id}.", field=param)
