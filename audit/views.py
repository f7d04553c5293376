from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from audit.selectors import audit_event_list
from audit.serializers import AuditEventListSerializer, AuditEventSerializer, parse_iso8601
from platform_api.api import PlatformAPIView
from platform_api.pagination import ListParams
from platform_api.serializers import ErrorSerializer


class AuditEventListView(PlatformAPIView):
    @extend_schema(
        operation_id="events_list",
        tags=["Audit log"],
        parameters=[
            OpenApiParameter("type", str, description="Event type, e.g. api_key.created."),
            OpenApiParameter("resource_type", str, description="e.g. api_key, webhook."),
            OpenApiParameter("from", str, description="ISO 8601; events at or after."),
            OpenApiParameter("to", str, description="ISO 8601; events at or before."),
            OpenApiParameter("page", int, description="Default 1."),
            OpenApiParameter("limit", int, description="Default 20, max 100."),
        ],
        responses={200: AuditEventListSerializer, **{c: ErrorSerializer for c in (400, 401, 403, 429, 500)}},
    )
    def get(self, request):
        query = request.query_params
        params = ListParams.from_query(query)
        events = audit_event_list(
            organization=request.auth.organization,
            event_type=query.get("type") or None,
            resource_type=query.get("resource_type") or None,
            created_from=parse_iso8601(query, "from"),
            created_to=parse_iso8601(query, "to"),
        )
        page, total = params.apply(events)
        return Response(
            {
                "success": True,
                "data": AuditEventSerializer(page, many=True).data,
                "pagination": {
                    "page": params.page,
                    "limit": params.limit,
                    "total": total,
                    "total_pages": params.total_pages(total),
                },
            }
        )
