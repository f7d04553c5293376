"""Platform core endpoints: API keys. Views parse, call a service, render."""

from __future__ import annotations

from django.http import HttpRequest
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from core import openapi
from platform_api import selectors, services
from platform_api.api import PlatformAPIView, render_list
from platform_api.context import RequestContext
from platform_api.errors import PlatformError, platform_error_response
from platform_api.models import Permission
from platform_api.pagination import MAX_LIMIT, MAX_PAGE
from platform_api.rows import Rows
from platform_api.serializers import (
    ApiKeyCreatedSerializer,
    ApiKeyCreateSerializer,
    ApiKeyListSerializer,
    ApiKeyRevokedSerializer,
    ApiKeySerializer,
    ErrorSerializer,
)

ERRORS = {code: ErrorSerializer for code in (400, 401, 403, 404, 409, 429, 500)}
IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "pattern": "^[ -~]{1,255}$"},
    OpenApiParameter.HEADER,
    description="Replays the first response for 24 hours; a different body under the same key is 409.",
)
LIST_PARAMETERS = [
    openapi.integer("page", minimum=1, maximum=MAX_PAGE, description="1-indexed page, default 1."),
    openapi.integer("limit", minimum=1, maximum=MAX_LIMIT, description="Page size, default 20."),
    OpenApiParameter("order", str, enum=["asc", "desc"], description="Default desc."),
]

API_KEY_ROWS = Rows(ApiKeySerializer, object=lambda _row: "api_key")


class ApiKeyCollectionView(PlatformAPIView):
    permissions_by_method = {"GET": Permission.ADMIN, "POST": Permission.ADMIN}

    @extend_schema(
        operation_id="api_keys_list",
        tags=["API keys"],
        parameters=[
            *LIST_PARAMETERS,
            OpenApiParameter(
                "sort", str, enum=["created_at", "name", "last_used_at"], description="Default created_at."
            ),
        ],
        responses={200: ApiKeyListSerializer, **ERRORS},
    )
    def get(self, request):
        keys = selectors.api_key_list(organization=request.auth.organization)
        return render_list(
            request, keys, ApiKeySerializer, ("created_at", "name", "last_used_at"), rows=API_KEY_ROWS
        )

    @extend_schema(
        operation_id="api_keys_create",
        tags=["API keys"],
        request=ApiKeyCreateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={201: ApiKeyCreatedSerializer, **ERRORS},
    )
    def post(self, request):
        serializer = ApiKeyCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        api_key, raw_key = services.api_key_create(
            organization=request.auth.organization,
            ctx=RequestContext.from_request(request),
            **serializer.validated_data,
        )
        body = ApiKeyCreatedSerializer(api_key, context={"raw_key": raw_key}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ApiKeyDetailView(PlatformAPIView):
    permissions_by_method = {"DELETE": Permission.ADMIN}

    @extend_schema(
        operation_id="api_keys_revoke", tags=["API keys"], responses={200: ApiKeyRevokedSerializer, **ERRORS}
    )
    def delete(self, request, key_id: str):
        api_key = selectors.api_key_get(organization=request.auth.organization, key_id=key_id)
        services.api_key_revoke(api_key=api_key, ctx=RequestContext.from_request(request))
        return Response({"object": "api_key_revoked", "id": api_key.id, "revoked": True})


@csrf_exempt  # an API path, not a form: no CSRF token is ever sent (else an HTML 403 for POST/DELETE)
def platform_route_not_found(request: HttpRequest, path: str = ""):
    """Any path under /api/v1 that matches no endpoint."""
    return platform_error_response(
        PlatformError(
            status=404,
            type="not_found_error",
            code="resource_not_found",
            message=f"No endpoint at {request.method} {request.path}.",
        )
    )
