"""The organization's branding as payers see it: name, logo, accent colour and support contact.

The logo is uploaded through the API (`PUT /api/v1/organization/logo`, base64 in JSON) or the admin, checked
with Pillow (PNG, JPEG, WebP or GIF; at most LOGO_MAX_BYTES and LOGO_MAX_SIDE pixels a side before it is
decoded), and kept re-encoded as a PNG of at most LOGO_SIDE pixels a side: what a payer's browser receives is
pixels the service wrote, never the uploaded file (no SVG script, no polyglot, no metadata). The page loads it
from this origin (`/pay/logo/{org}/{digest}.png`, immutable) as the Content-Security-Policy demands.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import warnings
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from merchant.models import OrganizationLogo
from platform_api.api import PlatformAPIView
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.models import Organization, Permission
from platform_api.signals import record_write
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER

LOGO_MAX_BYTES = 512 * 1024
LOGO_MAX_SIDE = 4096  # refused before decoding: a small file can claim a huge canvas (a decompression bomb)
LOGO_SIDE = 512
LOGO_FORMATS = {"PNG", "JPEG", "WEBP", "GIF"}
DEFAULT_ACCENT = "#1f4fd1"


class LogoError(ValueError):
    """Why an upload is not a logo, in words for the merchant."""


@dataclass(frozen=True)
class Logo:
    png: bytes
    width: int
    height: int

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.png).hexdigest()


def logo_from_upload(raw: bytes) -> Logo:
    """The upload as the service keeps it, or LogoError: checked by Pillow, re-encoded as a PNG."""
    from PIL import Image, UnidentifiedImageError

    if not raw:
        raise LogoError("The image is empty.")
    if len(raw) > LOGO_MAX_BYTES:
        raise LogoError(f"The image is {len(raw)} bytes; at most {LOGO_MAX_BYTES} are accepted.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(raw)) as probe:
                kind = probe.format
                width, height = probe.size
                if kind not in LOGO_FORMATS:
                    raise LogoError(f"A logo is a PNG, JPEG, WebP or GIF image, not {kind or 'this file'}.")
                if max(width, height) > LOGO_MAX_SIDE:
                    raise LogoError(f"The image is {width}x{height} pixels; at most {LOGO_MAX_SIDE} a side.")
                probe.verify()
            with Image.open(io.BytesIO(raw)) as image:
                image.seek(0)
                picture = image.convert("RGBA")
    except LogoError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError, Warning):
        raise LogoError("The file is not a readable PNG, JPEG, WebP or GIF image.") from None
    picture.thumbnail((LOGO_SIDE, LOGO_SIDE))
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=True)
    return Logo(png=out.getvalue(), width=picture.width, height=picture.height)


def logo_url(organization: Organization) -> str | None:
    if not organization.logo_digest:
        return None
    return reverse(
        "pay-logo", kwargs={"organization_id": organization.id, "digest": organization.logo_digest}
    )


def brand_for(organization: Organization, branding: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the payer's pages and emails show of the merchant: a link's own `branding.business_name`
    first, then the organization's settings."""
    branding = branding or {}
    return {
        "name": branding.get("business_name") or organization.name,
        "logo_url": logo_url(organization),
        "color": organization.brand_color or "",
        "support_email": organization.support_email,
        "support_url": organization.support_url,
        "website_url": organization.website_url,
    }


# --- services -------------------------------------------------------------------------------


@transaction.atomic
def organization_logo_set(*, ctx: RequestContext, organization: Organization, logo: Logo) -> Organization:
    organization = Organization.objects.select_for_update().get(pk=organization.pk)
    OrganizationLogo.objects.update_or_create(
        organization=organization,
        defaults={
            "image": logo.png,
            "digest": logo.digest,
            "width": logo.width,
            "height": logo.height,
            "updated_at": timezone.now(),
        },
    )
    organization.logo_digest = logo.digest
    organization.updated_at = timezone.now()
    organization.save(update_fields=["logo_digest", "updated_at"])
    record_write(
        ctx=ctx,
        event_type=AuditName.ORGANIZATION_LOGO_UPDATED,
        resource_type="organization",
        resource_id=organization.id,
    )
    return organization


@transaction.atomic
def organization_logo_delete(*, ctx: RequestContext, organization: Organization) -> Organization:
    organization = Organization.objects.select_for_update().get(pk=organization.pk)
    OrganizationLogo.objects.filter(organization=organization).delete()
    organization.logo_digest = ""
    organization.updated_at = timezone.now()
    organization.save(update_fields=["logo_digest", "updated_at"])
    record_write(
        ctx=ctx,
        event_type=AuditName.ORGANIZATION_LOGO_DELETED,
        resource_type="organization",
        resource_id=organization.id,
    )
    return organization


# --- views ------------------------------------------------------------------------------------------


@extend_schema_field({"type": "string", "format": "byte", "contentMediaType": "image/png"})
class Base64ImageField(serializers.CharField):
    """An image file in base64 (a `data:image/...;base64,` prefix is accepted)."""


class LogoUploadSerializer(serializers.Serializer):
    image = Base64ImageField(
        help_text=f"The image file, base64: PNG, JPEG, WebP or GIF, at most {LOGO_MAX_BYTES} bytes and "
        f"{LOGO_MAX_SIDE} pixels a side. Kept as a PNG of at most {LOGO_SIDE} pixels a side."
    )

    def validate_image(self, value: str) -> Logo:
        encoded = value.split(",", 1)[1] if value.startswith("data:") and "," in value else value
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise serializers.ValidationError("Must be the image file in base64.") from None
        try:
            return logo_from_upload(raw)
        except LogoError as exc:
            raise serializers.ValidationError(str(exc)) from None


LOGO_RESPONSE = inline_serializer(
    "OrganizationLogo",
    {"object": serializers.CharField(), "url": serializers.CharField(allow_null=True)},
)


def _logo_body(organization: Organization) -> dict[str, Any]:
    return {"object": "organization_logo", "url": logo_url(organization)}


class OrganizationLogoView(PlatformAPIView):
    permissions_by_method = {"PUT": Permission.ADMIN, "DELETE": Permission.ADMIN}

    @extend_schema(
        operation_id="organization_logo_retrieve",
        tags=["Organization"],
        responses={200: LOGO_RESPONSE, **ERRORS},
    )
    def get(self, request):
        return Response(_logo_body(request.auth.organization))

    @extend_schema(
        operation_id="organization_logo_update",
        tags=["Organization"],
        request=LogoUploadSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={200: LOGO_RESPONSE, **ERRORS},
    )
    def put(self, request):
        serializer = LogoUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        organization = organization_logo_set(
            ctx=RequestContext.from_request(request),
            organization=request.auth.organization,
            logo=serializer.validated_data["image"],
        )
        return Response(_logo_body(organization))

    @extend_schema(
        operation_id="organization_logo_delete",
        tags=["Organization"],
        responses={200: LOGO_RESPONSE, **ERRORS},
    )
    def delete(self, request):
        organization = organization_logo_delete(
            ctx=RequestContext.from_request(request), organization=request.auth.organization
        )
        return Response(_logo_body(organization))


@require_GET
def logo_image(request: HttpRequest, organization_id: str, digest: str) -> HttpResponse:
    """The logo's pixels; the address names its digest, so a cached copy never goes stale."""
    image = (
        OrganizationLogo.objects.filter(organization_id=organization_id, digest=digest)
        .values_list("image", flat=True)
        .first()
    )
    if image is None:
        raise Http404("no such logo")
    response = HttpResponse(bytes(image), content_type="image/png")
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    response["Content-Security-Policy"] = "default-src 'none'"
    return response
