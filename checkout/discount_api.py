"""Discount codes on the platform interface: serializers, services and views in one place (one small resource).

Writes need `admin`; reading needs `read`, and so does `validate`, which never uses a code up.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from chains.fields import TokenAmountField
from checkout.discounts import DiscountRefused, discount_evaluate
from checkout.models import DiscountCode, PaymentLink
from checkout.selectors import discount_code_list
from checkout.serializers import CODE, DiscountUpdateSerializer, DiscountValueField, DiscountWriteSerializer
from core import openapi
from core.errors import NOTHING_TO_UPDATE, Conflict, DomainError, ErrorCode, InvalidRequest
from core.fields import EpochMillisField, StrictCharField, StrictSerializer
from platform_api.api import PlatformAPIView
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.filters import BoolFilter, FilterSerializer, IdFilter, TextFilter
from platform_api.models import Organization, Permission
from platform_api.resources import Resource, resource_views
from platform_api.signals import record_write
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER

SORTS = ("created_at", "updated_at", "code", "current_uses")
MAX_BATCH = 100


class DiscountBatchSerializer(DiscountWriteSerializer):
    code = None
    codes = serializers.ListField(child=StrictCharField(max_length=60), min_length=1, max_length=MAX_BATCH)


class DiscountValidateSerializer(StrictSerializer):
    code = StrictCharField(max_length=60)
    payment_link_id = StrictCharField(max_length=64, required=False, allow_null=True)
    amount = TokenAmountField()


class DiscountSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `dc_`.")
    code = serializers.CharField(help_text="Upper-case.")
    type = serializers.CharField(help_text="percentage or fixed.")
    value = DiscountValueField(help_text="Percent (1..100), or the smallest token unit; a string.")
    payment_link_id = serializers.CharField(allow_null=True)
    max_uses = serializers.IntegerField(allow_null=True)
    current_uses = serializers.IntegerField(help_text="Completed payments with the code.")
    min_order_amount = TokenAmountField(allow_null=True, allow_zero=True)
    expires_at = EpochMillisField(allow_null=True)
    is_active = serializers.BooleanField()
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "discount_code"


# --- services ---------------------------------------------------------------------------

FIELDS = ("type", "value", "payment_link_id", "max_uses", "min_order_amount", "expires_at")


def _check(values: dict[str, Any], organization: Organization) -> None:
    if values.get("type") == DiscountCode.Type.PERCENTAGE and values.get("value", 1) > 100:
        raise InvalidRequest("'value': a percentage is between 1 and 100.", field="value")
    link_id = values.get("payment_link_id")
    if (
        link_id
        and not PaymentLink.objects.filter(
            organization=organization, pk=link_id, deleted_at__isnull=True
        ).exists()
    ):
        raise InvalidRequest(f"'payment_link_id': no payment link {link_id}.", field="payment_link_id")


def _duplicate(code: str) -> Conflict:
    return Conflict(f"A discount code {code} already exists.", field="code", code=ErrorCode.UNIQUE)


def _audit(ctx: RequestContext, event: AuditName, code_id: str, *, created: bool = False) -> None:
    record_write(
        ctx=ctx, event_type=event, resource_type="discount_code", resource_id=code_id, created=created
    )


def discount_code_create(
    *, ctx: RequestContext, organization: Organization, data: dict[str, Any]
) -> DiscountCode:
    values = {name: data[name] for name in FIELDS if name in data}
    _check(values, organization)
    code = data["code"].upper()
    try:
        with transaction.atomic():
            created = DiscountCode.objects.create(organization=organization, code=code, **values)
            _audit(ctx, AuditName.DISCOUNT_CODE_CREATED, created.id, created=True)
    except IntegrityError:
        raise _duplicate(code) from None
    return created


def discount_code_update(*, ctx: RequestContext, code: DiscountCode, data: dict[str, Any]) -> DiscountCode:
    if not data:
        raise InvalidRequest(NOTHING_TO_UPDATE, code=ErrorCode.NOTHING_TO_UPDATE)
    values = {name: data[name] for name in (*FIELDS, "is_active") if name in data}
    if "code" in data:
        values["code"] = data["code"].upper()
    _check({"type": code.type, "value": int(code.value)} | values, code.organization)
    if "max_uses" in values and values["max_uses"] is not None and values["max_uses"] < code.current_uses:
        raise InvalidRequest(f"'max_uses': {code.current_uses} uses are already counted.", field="max_uses")
    try:
        with transaction.atomic():
            DiscountCode.objects.filter(pk=code.pk).update(**values, updated_at=timezone.now())
            _audit(ctx, AuditName.DISCOUNT_CODE_UPDATED, code.id)
    except IntegrityError:
        raise _duplicate(values.get("code", code.code)) from None
    code.refresh_from_db()
    return code


@transaction.atomic
def discount_code_delete(*, ctx: RequestContext, code: DiscountCode) -> None:
    """The code stops working and leaves the API; checkouts that used it keep their discount."""
    DiscountCode.objects.filter(pk=code.pk).update(deleted_at=timezone.now(), is_active=False)
    _audit(ctx, AuditName.DISCOUNT_CODE_DELETED, code.id)


def discount_codes_batch(
    *, ctx: RequestContext, organization: Organization, data: dict[str, Any]
) -> tuple[list[DiscountCode], list[dict[str, str]]]:
    """Each code with the shared fields, each in its own transaction; those that cannot be made, with why."""
    shared = {key: value for key, value in data.items() if key != "codes"}
    created: list[DiscountCode] = []
    errors: list[dict[str, str]] = []
    for raw in data["codes"]:
        if not CODE.match(raw):
            errors.append({"code": raw, "error": "Letters, digits, '_' or '-', at most 50."})
            continue
        try:
            created.append(
                discount_code_create(ctx=ctx, organization=organization, data={**shared, "code": raw})
            )
        except DomainError as exc:
            errors.append({"code": raw, "error": exc.message})
    return created, errors


# --- views ------------------------------------------------------------------------------------


class DiscountFilters(FilterSerializer):
    payment_link_id = IdFilter()
    active = BoolFilter()
    search = TextFilter()


DISCOUNT_CODES = Resource(
    object_type="discount_code",
    operations="discount_codes",
    tag="Discount codes",
    schema_name="DiscountCode",
    serializer=DiscountSerializer,
    write_serializer=DiscountWriteSerializer,
    update_serializer=DiscountUpdateSerializer,
    rows=lambda: DiscountCode.objects.filter(deleted_at__isnull=True),
    select=discount_code_list,
    filters=DiscountFilters,
    sorts=SORTS,
    list_parameters=[
        OpenApiParameter("sort", str, enum=list(SORTS)),
        openapi.text("payment_link_id", max_length=64),
        OpenApiParameter("active", str, enum=["true", "false"]),
        openapi.text("search", description="Part of the code."),
    ],
    create=lambda ctx, organization, data: discount_code_create(
        ctx=ctx, organization=organization, data=data
    ),
    update=lambda ctx, code, data: discount_code_update(ctx=ctx, code=code, data=data),
    delete=lambda ctx, code: discount_code_delete(ctx=ctx, code=code),
    permissions_by_method={"POST": Permission.ADMIN, "PATCH": Permission.ADMIN, "DELETE": Permission.ADMIN},
)
DiscountCollectionView, DiscountDetailView = resource_views(DISCOUNT_CODES)


class DiscountValidateView(PlatformAPIView):
    permissions_by_method = {"POST": Permission.READ}

    @extend_schema(
        operation_id="discount_codes_validate",
        tags=["Discount codes"],
        request=DiscountValidateSerializer,
        responses={
            200: inline_serializer(
                "DiscountValidation",
                {
                    "object": serializers.CharField(),
                    "valid": serializers.BooleanField(),
                    "discount_code": DiscountSerializer(required=False),
                    "discount_amount": serializers.CharField(required=False),
                    "final_amount": serializers.CharField(required=False),
                    "reason": serializers.CharField(required=False),
                },
            ),
            **ERRORS,
        },
        description="What a code would take off an amount; never uses the code up.",
    )
    def post(self, request):
        serializer = DiscountValidateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            found = discount_evaluate(
                organization=request.auth.organization,
                code=data["code"],
                payment_link_id=data.get("payment_link_id"),
                amount=data["amount"],
            )
        except DiscountRefused as refused:
            return Response({"object": "discount_validation", "valid": False, "reason": refused.reason})
        return Response(
            {
                "object": "discount_validation",
                "valid": True,
                "discount_code": DiscountSerializer(found.code).data,
                "discount_amount": str(found.amount),
                "final_amount": str(found.final(data["amount"])),
            }
        )


class DiscountBatchView(PlatformAPIView):
    permissions_by_method = {"POST": Permission.ADMIN}

    @extend_schema(
        operation_id="discount_codes_batch",
        tags=["Discount codes"],
        request=DiscountBatchSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            200: inline_serializer(
                "DiscountBatchResult",
                {
                    "object": serializers.CharField(),
                    "created": DiscountSerializer(many=True),
                    "errors": inline_serializer(
                        "DiscountBatchError",
                        {
                            "code": serializers.CharField(),
                            "error": serializers.CharField(),
                        },
                        many=True,
                    ),
                },
            ),
            **ERRORS,
        },
        description="Create up to 100 codes with the same fields; each code that cannot be created is in `errors`.",
    )
    def post(self, request):
        serializer = DiscountBatchSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        codes, errors = discount_codes_batch(
            ctx=RequestContext.from_request(request),
            organization=request.auth.organization,
            data=serializer.validated_data,
        )
        created = [DiscountSerializer(code).data for code in codes]
        status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response({"object": "batch_result", "created": created, "errors": errors}, status=status_code)
