from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from audit.selectors import audit_event_list
from audit.serializers import AuditEventListSerializer, AuditEventSerializer, parse_iso8601
from core import openapi
from platform_api.api import PlatformAPIView
from platform_api.pagination import MAX_LIMIT, MAX_PAGE, ListParams
from platform_api.rows import Rows
from platform_api.serializers import ErrorSerializer

# The list pages through the newest LIST_WINDOW matching events; `total` is exact up to it. Counting
# every event of a busy organization on each request would scan millions of rows (see docs/decisions.md).
LIST_WINDOW = 10_000
# The page read as values and rendered as the serializer would (platform_api/rows.py): the serializer's
# per-field dispatch over model instances was 40 % of the request.
EVENT_ROWS = Rows(AuditEventSerializer)


class AuditEventListView(PlatformAPIView):
    @extend_schema(
        operation_id="events_list",
        tags=["Audit log"],
        description=(
            f"Newest first. Pages reach the newest {LIST_WINDOW:,} matching events, and `total` is exact up to "
            f"{LIST_WINDOW:,}: a `total` of {LIST_WINDOW:,} means at least that many. Pages past them are empty; "
            "narrow with `to` (and `from`) to reach older events."
        ),
        parameters=[
            openapi.text("type", max_length=100, description="Event type, e.g. api_key.created."),
            openapi.text("resource_type", max_length=100, description="e.g. api_key, webhook."),
            OpenApiParameter("from", OpenApiTypes.DATETIME, description="ISO 8601; events at or after."),
            OpenApiParameter("to", OpenApiTypes.DATETIME, description="ISO 8601; events at or before."),
            openapi.integer("page", minimum=1, maximum=MAX_PAGE, description="Default 1."),
            openapi.integer("limit", minimum=1, maximum=MAX_LIMIT, description="Default 20."),
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
        page, total = params.apply(EVENT_ROWS.values(events), count_bound=LIST_WINDOW)
        return Response(
            {
                "success": True,
                "data": EVENT_ROWS.render(page),
                "pagination": {
                    "page": params.page,
                    "limit": params.limit,
                    "total": total,
                    "total_pages": params.total_pages(total),
                },
            }
        )
