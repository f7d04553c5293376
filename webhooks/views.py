"""Webhook endpoint management under /api/v1/webhooks (envelope `{success: true, data}`)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import openapi
from platform_api.api import PlatformAPIView
from platform_api.context import RequestContext
from platform_api.models import Permission
from platform_api.pagination import parse_positive_int
from platform_api.serializers import ErrorSerializer
from webhooks import selectors, services
from webhooks.models import WebhookEndpoint
from webhooks.payloads import CALLBACKS
from webhooks.serializers import (
    DeliverySerializer,
    WebhookCreatedSerializer,
    WebhookCreateSerializer,
    WebhookSerializer,
    WebhookUpdateSerializer,
)

ERRORS = {code: ErrorSerializer for code in (400, 401, 403, 404, 409, 429, 500)}


def envelope(name: str, data):
    return inline_serializer(name=name, fields={"success": serializers.BooleanField(), "data": data})


def ok(data, status_code: int = status.HTTP_200_OK) -> Response:
    return Response({"success": True, "data": data}, status=status_code)


class WebhookViewMixin:
    request: Request
    # Managing endpoints needs admin; reading them (and their deliveries) needs read.
    permissions_by_method: dict[str, str] = {
        "GET": Permission.READ,
        "POST": Permission.ADMIN,
        "PATCH": Permission.ADMIN,
        "DELETE": Permission.ADMIN,
    }

    def get_endpoint(self, webhook_id: str) -> WebhookEndpoint:
        return selectors.webhook_endpoint_get(
            organization=self.request.auth.organization, webhook_id=webhook_id
        )


class WebhookCollectionView(WebhookViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="webhooks_list",
        tags=["Webhooks"],
        responses={200: envelope("WebhookListEnvelope", WebhookSerializer(many=True)), **ERRORS},
    )
    def get(self, request):
        endpoints = selectors.webhook_endpoint_list(organization=request.auth.organization)
        return ok(WebhookSerializer(endpoints, many=True).data)

    @extend_schema(
        operation_id="webhooks_create",
        tags=["Webhooks"],
        request=WebhookCreateSerializer,
        responses={201: envelope("WebhookCreatedEnvelope", WebhookCreatedSerializer()), **ERRORS},
        callbacks=CALLBACKS,
    )
    def post(self, request):
        serializer = WebhookCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        endpoint, secret = services.webhook_endpoint_create(
            ctx=RequestContext.from_request(request), **serializer.validated_data
        )
        return ok(
            WebhookCreatedSerializer(endpoint, context={"secret": secret}).data, status.HTTP_201_CREATED
        )


class WebhookDetailView(WebhookViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="webhooks_retrieve",
        tags=["Webhooks"],
        responses={200: envelope("WebhookEnvelope", WebhookSerializer()), **ERRORS},
    )
    def get(self, request, webhook_id: str):
        return ok(WebhookSerializer(self.get_endpoint(webhook_id)).data)

    @extend_schema(
        operation_id="webhooks_update",
        tags=["Webhooks"],
        request=WebhookUpdateSerializer,
        responses={200: envelope("WebhookUpdatedEnvelope", WebhookSerializer()), **ERRORS},
    )
    def patch(self, request, webhook_id: str):
        endpoint = self.get_endpoint(webhook_id)
        serializer = WebhookUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        endpoint = services.webhook_endpoint_update(
            ctx=RequestContext.from_request(request), endpoint=endpoint, **serializer.validated_data
        )
        return ok(WebhookSerializer(endpoint).data)

    @extend_schema(
        operation_id="webhooks_delete",
        tags=["Webhooks"],
        responses={
            200: envelope(
                "WebhookDeleted",
                inline_serializer(
                    "WebhookDeletedData",
                    {"id": serializers.CharField(), "deleted": serializers.BooleanField()},
                ),
            ),
            **ERRORS,
        },
    )
    def delete(self, request, webhook_id: str):
        endpoint = self.get_endpoint(webhook_id)
        services.webhook_endpoint_delete(ctx=RequestContext.from_request(request), endpoint=endpoint)
        return ok({"id": webhook_id, "deleted": True})


def _attempt_data(result) -> dict:
    """What a synchronous attempt tells the caller; `error` says why it failed, e.g. no answer in time."""
    error = None
    if not result.succeeded:
        error = (
            f"The receiver did not answer within {settings.WEBHOOK_SYNC_TIMEOUT_SECONDS:g} seconds."
            if result.timed_out
            else result.error or None
        )
    return {
        "delivery_id": result.delivery_id,
        "status": "sent",
        "response_code": result.response_code,
        "success": result.succeeded,
        "error": error,
    }


ATTEMPT_FIELDS = {
    "delivery_id": serializers.CharField(),
    "status": serializers.CharField(),
    "response_code": serializers.IntegerField(allow_null=True),
    "success": serializers.BooleanField(),
    "error": serializers.CharField(allow_null=True, help_text="Why the attempt failed; null on success."),
}


class WebhookTestView(WebhookViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="webhooks_test",
        tags=["Webhooks"],
        request=None,
        responses={
            200: envelope("WebhookTestResult", inline_serializer("WebhookTestData", ATTEMPT_FIELDS)),
            **ERRORS,
        },
    )
    def post(self, request, webhook_id: str):
        result = services.webhook_endpoint_send_test(endpoint=self.get_endpoint(webhook_id))
        return ok(_attempt_data(result))


class WebhookRotateSecretView(WebhookViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="webhooks_rotate_secret",
        tags=["Webhooks"],
        request=None,
        description="A new secret, shown only in this response. The previous secret keeps signing beside it "
        "for 24 hours (`webhook-signature` carries both, `X-Service-Signature-Previous` the old one).",
        responses={200: envelope("WebhookRotatedEnvelope", WebhookCreatedSerializer()), **ERRORS},
    )
    def post(self, request, webhook_id: str):
        endpoint, secret = services.webhook_endpoint_rotate_secret(
            ctx=RequestContext.from_request(request), endpoint=self.get_endpoint(webhook_id)
        )
        return ok(WebhookCreatedSerializer(endpoint, context={"secret": secret}).data)


class WebhookDeliveriesView(WebhookViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="webhooks_deliveries",
        tags=["Webhooks"],
        parameters=[
            openapi.integer("limit", minimum=1, maximum=100, description="Default 20. Newest first.")
        ],
        responses={200: envelope("DeliveryList", DeliverySerializer(many=True)), **ERRORS},
    )
    def get(self, request, webhook_id: str):
        endpoint = self.get_endpoint(webhook_id)
        limit = parse_positive_int(request.query_params, "limit", 20, 100)
        deliveries = selectors.webhook_delivery_list(endpoint=endpoint, limit=limit)
        return ok(DeliverySerializer(deliveries, many=True).data)


class WebhookDeliveryRetryView(WebhookViewMixin, PlatformAPIView):
    @extend_schema(
        operation_id="webhooks_delivery_retry",
        tags=["Webhooks"],
        request=None,
        responses={
            200: envelope(
                "DeliveryRetryResult",
                inline_serializer(
                    "DeliveryRetryData", {**ATTEMPT_FIELDS, "attempts": serializers.IntegerField()}
                ),
            ),
            **ERRORS,
        },
    )
    def post(self, request, webhook_id: str, delivery_id: str):
        endpoint = self.get_endpoint(webhook_id)
        delivery = selectors.webhook_delivery_get(endpoint=endpoint, delivery_id=delivery_id)
        result = services.webhook_delivery_retry(delivery=delivery)
        return ok({**_attempt_data(result), "attempts": result.attempts})
