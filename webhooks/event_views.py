"""The organization's webhook events under /api/v1/webhook-events (merchant resources: raw objects, the list
envelope): list, one with the exact bodies and every attempt, and resend. Views parse, call, render."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core import openapi
from platform_api.api import PlatformAPIView, list_of, render_list
from platform_api.context import RequestContext
from platform_api.filters import (
    BoolFilter,
    ChoiceFilter,
    CreatedWindowFilters,
    FilterSerializer,
    IdFilter,
    MillisFilter,
    QueryField,
)
from platform_api.inputs import MAX_MILLIS
from platform_api.models import Permission
from platform_api.services import api_key_recheck
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER, LIST_PARAMETERS
from webhooks import selectors, services
from webhooks.events import EVENT_TYPES
from webhooks.listen_slots import listen_slot
from webhooks.serializers import (
    WebhookEventDetailSerializer,
    WebhookEventResendSerializer,
    WebhookEventSerializer,
)

TAGS = ["Webhook events"]
SORTS = ("created_at",)
KEPT = "Events are kept 30 days (WEBHOOK_EVENT_RETENTION_DAYS)."


class WebhookEventFilters(CreatedWindowFilters):
    type = ChoiceFilter(EVENT_TYPES, source="event_type")
    delivered = BoolFilter()
    endpoint = IdFilter()


class WebhookEventCollectionView(PlatformAPIView):
    @extend_schema(
        operation_id="webhook_events_list",
        tags=TAGS,
        description=f"Every event the organization's endpoints were (or would have been) sent, newest first. {KEPT}",
        parameters=[
            *LIST_PARAMETERS,
            OpenApiParameter("type", str, enum=list(EVENT_TYPES)),
            OpenApiParameter(
                "delivered", str, enum=["true", "false"], description="Whether any endpoint answered 2xx."
            ),
            openapi.text("endpoint", max_length=64, description="Events sent (or tried) to this `wh_…`."),
            openapi.integer("from", minimum=0, maximum=MAX_MILLIS, description="Created at or after (ms)."),
            openapi.integer("to", minimum=0, maximum=MAX_MILLIS, description="Created at or before (ms)."),
        ],
        responses={200: list_of("WebhookEventList", WebhookEventSerializer(many=True)), **ERRORS},
    )
    def get(self, request):
        filters = WebhookEventFilters.filters(request.query_params)
        events = selectors.webhook_event_list(organization=request.auth.organization, **filters)
        return render_list(request, events, WebhookEventSerializer, SORTS)


class WebhookEventDetailView(PlatformAPIView):
    @extend_schema(
        operation_id="webhook_events_retrieve",
        tags=TAGS,
        description="With each delivery's exact body and every attempt, per endpoint.",
        responses={200: WebhookEventDetailSerializer, **ERRORS},
    )
    def get(self, request, event_id: str):
        event = selectors.webhook_event_get(
            organization=request.auth.organization, event_id=event_id, attempts=True
        )
        return Response(WebhookEventDetailSerializer(event).data)


class WebhookEventResendView(PlatformAPIView):
    permissions_by_method = {"POST": Permission.ADMIN}

    @extend_schema(
        operation_id="webhook_events_resend",
        tags=TAGS,
        request=WebhookEventResendSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        description="A new delivery of the event, to `endpoint` or to every active endpoint it went to, queued "
        "now: the same body, signed afresh, under the same `webhook-id` (the event's id), so a receiver that has "
        "it already recognizes it. Answers the event with its deliveries, the new ones pending.",
        responses={200: WebhookEventDetailSerializer, **ERRORS},
    )
    def post(self, request, event_id: str):
        serializer = WebhookEventResendSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        event = selectors.webhook_event_get(organization=request.auth.organization, event_id=event_id)
        services.webhook_event_resend(
            ctx=RequestContext.from_request(request),
            event=event,
            endpoint_id=serializer.validated_data.get("endpoint"),
        )
        event = selectors.webhook_event_get(
            organization=request.auth.organization, event_id=event_id, attempts=True
        )
        return Response(WebhookEventDetailSerializer(event).data)


# --- listening: the events as they happen, by long poll (the CLI's `listen`) -------------------------------------

LISTEN_MAX_WAIT_SECONDS = 25
LISTEN_POLL_SECONDS = 0.5
LISTEN_MAX_SKIP_CHARS = 6_000  # about 200 ids, within a request line (8,190)


class IdListFilter(QueryField):
    """Comma-separated ids, LISTEN_MAX_SKIP_CHARS at most; a part that is no event id matches nothing."""

    def to_internal_value(self, data) -> set[str]:
        if len(str(data)) > LISTEN_MAX_SKIP_CHARS:
            self.refuse(f"must be at most {LISTEN_MAX_SKIP_CHARS} characters of comma-separated event ids.")
        return {part.strip() for part in str(data).split(",") if 0 < len(part.strip()) <= 64}


class EventTypesFilter(QueryField):
    """Comma-separated event types; `refund.*` is every type beginning `refund.`, `*` every type."""

    def to_internal_value(self, data) -> list[str]:
        wanted: set[str] = set()
        for part in (p.strip() for p in str(data).split(",")):
            if not part:
                continue
            if part.endswith("*"):
                matched = {t for t in EVENT_TYPES if t.startswith(part[:-1])}
            else:
                matched = {part} & set(EVENT_TYPES)
            if not matched:
                self.refuse(f"names no event type: '{part[:64]}' (types: {', '.join(EVENT_TYPES)}).")
            wanted |= matched
        return sorted(wanted)


class WaitFilter(QueryField):
    def to_internal_value(self, data) -> int:
        if not (isinstance(data, str) and data.isdigit() and int(data) <= LISTEN_MAX_WAIT_SECONDS):
            self.refuse(f"must be a whole number of seconds from 0 to {LISTEN_MAX_WAIT_SECONDS}.")
        return int(data)


class ListenFilters(FilterSerializer):
    after = IdFilter()
    since = MillisFilter()
    skip = IdListFilter()
    types = EventTypesFilter()
    wait = WaitFilter()


class WebhookEventListenView(PlatformAPIView):
    @extend_schema(
        operation_id="webhook_events_listen",
        tags=TAGS,
        description="The organization's events after a point, oldest first, as they happen: the answer comes "
        f"as soon as there is one, or after `wait` seconds (at most {LISTEN_MAX_WAIT_SECONDS}) with none. Ask "
        "again with `after` = the last event's id (or, before any event, `since` = the answer's `now`): no "
        "event is missed or repeated, across the service's restarts too. A transaction that commits late can "
        "hold an event older than the last one had: keep `after` a few seconds behind and name the events had "
        "since in `skip`, as `checkout-cli listen` does. Neither `after` nor `since`: from now. A key revoked "
        "while it waits ends the wait with 401.",
        parameters=[
            openapi.text("after", max_length=64, description="An event id (`whe_…`): the events after it."),
            openapi.integer(
                "since", minimum=0, maximum=MAX_MILLIS, description="Events created at or after (ms)."
            ),
            openapi.text(
                "skip", max_length=LISTEN_MAX_SKIP_CHARS, description="Comma-separated ids already had."
            ),
            openapi.text("types", max_length=1000, description="Comma-separated types; `refund.*`, `*`."),
            openapi.integer("wait", minimum=0, maximum=LISTEN_MAX_WAIT_SECONDS, description="Default 20."),
        ],
        responses={
            200: inline_serializer(
                "WebhookEventBatch",
                {
                    "object": serializers.CharField(default="list"),
                    "data": WebhookEventSerializer(many=True),
                    "now": serializers.IntegerField(help_text="The service's time (ms) when it answered."),
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request):
        filters = ListenFilters.filters(request.query_params)
        with listen_slot(api_key_id=request.auth.pk, organization_id=request.auth.organization_id):
            events = selectors.webhook_events_wait(
                organization=request.auth.organization,
                after_id=filters.get("after"),
                since=filters.get("since"),
                skip=filters.get("skip", set()),
                types=filters.get("types"),
                wait_seconds=min(filters.get("wait", 20), settings.WEBHOOK_LISTEN_MAX_WAIT_SECONDS),
                still_allowed=lambda: api_key_recheck(request.auth),
                every=LISTEN_POLL_SECONDS,
            )
        return Response(
            {
                "object": "list",
                "data": WebhookEventSerializer(events, many=True).data,
                "now": int(timezone.now().timestamp() * 1000),
            }
        )
