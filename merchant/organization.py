"""The organization's settings as merchants edit them: name, defaults for new links, branding, redirect
domains (`GET`/`PATCH /api/v1/organization`)."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from chains.fields import AddressField, PayeeAddressField, SupportedChainIdField
from chains.payees import payout_chain_refusal
from core.errors import NOTHING_TO_UPDATE, ErrorCode, InvalidRequest
from core.fields import EpochMillisField, StrictCharField, StrictSerializer
from merchant.branding import Logo, logo_url, organization_logo_set
from merchant.signals import payout_defaults_changed
from platform_api.api import PlatformAPIView
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.errors import PlatformError
from platform_api.fields import https_url_field
from platform_api.inputs import check_token
from platform_api.models import Organization, Permission
from platform_api.signals import record_write
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER

HOST_NAME = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}|localhost")


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
    brand_color = serializers.CharField(help_text="The payer's pages' accent colour; empty: the default.")
    support_email = serializers.CharField(help_text="Shown to payers as the merchant's support contact.")
    support_url = serializers.CharField(help_text="Shown to payers: the merchant's help page.")
    logo = serializers.SerializerMethodField(
        help_text="Where the payer's pages load the uploaded logo from (`PUT /organization/logo`); null: none."
    )
    default_recipient_address = serializers.CharField(allow_null=True)
    default_chain_id = serializers.IntegerField(allow_null=True)
    default_token_address = serializers.CharField(allow_null=True)
    livemode = serializers.BooleanField(
        help_text="False: this is a live organization's test mode (its keys begin `svc_test_`; it transacts on "
        "test chains only)."
    )
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "organization"

    def get_logo(self, obj) -> str | None:
        return logo_url(obj)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for name in ("default_recipient_address", "default_token_address"):
            data[name] = data[name] or None
        return data


class OrganizationUpdateSerializer(StrictSerializer):
    an_update = True
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
    brand_color = serializers.RegexField(
        r"^#[0-9a-fA-F]{6}$",
        required=False,
        allow_blank=True,
        error_messages={"invalid": "Must be a colour such as #1a2b3c."},
    )
    support_email = serializers.EmailField(max_length=254, required=False, allow_blank=True)
    support_url = https_url_field(required=False, allow_blank=True)
    default_recipient_address = PayeeAddressField(required=False, allow_null=True)
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


@transaction.atomic
def organization_update(
    *, ctx: RequestContext, organization: Organization, data: dict[str, Any]
) -> Organization:
    if not data:
        raise InvalidRequest(NOTHING_TO_UPDATE, code=ErrorCode.NOTHING_TO_UPDATE)
    organization = Organization.objects.select_for_update().get(pk=organization.pk)
    before = payout_defaults(organization)
    for name, value in data.items():
        setattr(organization, name, value if value is not None or name == "default_chain_id" else "")
    chain, token = organization.default_chain_id, organization.default_token_address
    if token and chain is None:
        raise InvalidRequest("'default_chain_id': a default token needs its chain.", field="default_chain_id")
    if token and chain is not None:
        check_token(chain, token, param="default_token_address")
    organization.updated_at = timezone.now()
    organization.save()
    record_write(
        ctx=ctx,
        event_type=AuditName.ORGANIZATION_UPDATED,
        resource_type="organization",
        resource_id=organization.id,
    )
    after = payout_defaults(organization)
    if after != before:
        payout_defaults_changed.send(
            sender=Organization, organization=organization, before=before, after=after, actor=ctx.actor
        )
    return organization


PAYOUT_FIELDS = ("default_recipient_address", "default_chain_id", "default_token_address")


def payout_defaults(organization: Organization) -> dict[str, Any]:
    """Where new links and products pay out unless they say otherwise (addresses compared lower-cased)."""
    recipient, token = organization.default_recipient_address, organization.default_token_address
    return {
        "default_recipient_address": recipient.lower() if recipient else None,
        "default_chain_id": organization.default_chain_id,
        "default_token_address": token.lower() if token else None,
    }


# --- views ------------------------------------------------------------------------------------------


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


DEFAULTS = {
    "token_address": "default_token_address",
    "chain_id": "default_chain_id",
    "recipient_address": "default_recipient_address",
}


def fill_defaults(organization: Organization, values: dict[str, Any]) -> dict[str, Any]:
    """The organization's default token, chain and recipient where the request names none; else 400."""
    for name, default in DEFAULTS.items():
        if values.get(name) in (None, ""):
            fallback = getattr(organization, default)
            if fallback in (None, ""):
                raise InvalidRequest(
                    f"The field '{name}' is required (the organization has no {default}).",
                    field=name,
                    code=ErrorCode.REQUIRED,
                )
            values[name] = fallback
    if values.get("chain_id") is not None and (refusal := payout_chain_refusal(values["chain_id"])):
        raise InvalidRequest(f"'chain_id': {refusal}", field="chain_id")
    return values


@transaction.atomic
def organization_branding_update(
    *, ctx: RequestContext, organization: Organization, data: dict[str, Any], logo: Logo | None
) -> Organization:
    """The dashboard's branding form: the organization's fields and, when one was uploaded, its logo, in one
    transaction (a refusal of either leaves both as they were)."""
    organization = organization_update(ctx=ctx, organization=organization, data=data)
    if logo is not None:
        organization = organization_logo_set(ctx=ctx, organization=organization, logo=logo)
    return organization
