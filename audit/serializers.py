from __future__ import annotations

from datetime import UTC

from django.utils.dateparse import parse_datetime
from rest_framework import serializers

from platform_api.errors import PlatformError


class AuditEventSerializer(serializers.Serializer):
    id = serializers.CharField()
    event_type = serializers.CharField()
    resource_type = serializers.CharField()
    resource_id = serializers.CharField()
    ip_address = serializers.CharField(allow_null=True)
    request_method = serializers.CharField()
    request_path = serializers.CharField()
    status_code = serializers.IntegerField()
    actor = serializers.CharField(
        help_text="Who acted: `api_key:ak_...`, `member:mem_...` (the dashboard) or `staff:<username>` (the admin)."
    )
    created_at = serializers.DateTimeField()


class PaginationSerializer(serializers.Serializer):
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total = serializers.IntegerField()
    total_pages = serializers.IntegerField()


class AuditEventListSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    data = AuditEventSerializer(many=True)
    pagination = PaginationSerializer()


def parse_iso8601(query, name: str):
    """An aware datetime from an ISO 8601 query parameter; a naive one is taken as UTC."""
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        value = parse_datetime(raw)
    except ValueError:
        value = None
    if value is None:
        raise PlatformError.invalid_field(name, f"'{name}' must be an ISO 8601 date-time, got '{raw}'.")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value
