"""Reads of platform core resources, scoped to one organization."""

from __future__ import annotations

from django.db.models import QuerySet

from core.errors import NotFound
from platform_api.models import ApiKey, Organization


def scoped_get(queryset: QuerySet, *, organization: Organization, resource_type: str, resource_id: str):
    """The organization's resource with this id; another tenant's is reported as not found."""
    obj = queryset.filter(organization=organization, pk=resource_id).first()
    if obj is None:
        raise NotFound(f"No {resource_type} with id '{resource_id}'.")
    return obj


def api_key_list(*, organization: Organization) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(organization=organization)


def api_key_get(*, organization: Organization, key_id: str) -> ApiKey:
    return scoped_get(
        ApiKey.objects.all(), organization=organization, resource_type="api_key", resource_id=key_id
    )
