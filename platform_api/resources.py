"""A merchant resource's collection and record endpoints, declared once.

Products, customers, discount codes and widgets each answer the same five calls: list (filters, sort, the
list envelope), create (201), retrieve, update (PATCH, partial) and delete (`{object, id, deleted}`). A
`Resource` names what differs: the serializers, the selector and its filters, the services, the scoped
lookup, the schema's words. `resource_views` builds the two views and their OpenAPI operations from it, so a
new resource is a declaration, and a rule of the five calls changes in one place.

The services keep their own keyword names; the resource adapts them with small functions (`create(ctx,
organization, data)`, `update(ctx, record, data)`, `delete(ctx, record)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Model, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from platform_api.api import PlatformAPIView, deleted, list_of, render_list
from platform_api.context import RequestContext
from platform_api.filters import FilterSerializer
from platform_api.models import Organization
from platform_api.selectors import scoped_get
from platform_api.views import ERRORS, IDEMPOTENCY_HEADER, LIST_PARAMETERS


@dataclass(frozen=True)
class Resource:
    object_type: str  # the `object` of a record, and the resource type its 404 names
    operations: str  # operation ids' prefix: `products` -> `products_list`, `products_create`, ...
    tag: str
    schema_name: str  # `Product` -> the schema's `ProductList` and `ProductDeleted`
    serializer: type[serializers.Serializer]
    write_serializer: type[serializers.Serializer]
    rows: Callable[[], QuerySet]  # every record the lookup may find (of any organization)
    select: Callable[..., QuerySet]  # selector(organization=..., **filters)
    filters: type[FilterSerializer]
    sorts: Sequence[str]
    list_parameters: Sequence[OpenApiParameter]
    create: Callable[[RequestContext, Organization, dict[str, Any]], Model]
    update: Callable[[RequestContext, Any, dict[str, Any]], Model]
    delete: Callable[[RequestContext, Any], Any]
    update_serializer: type[serializers.Serializer] | None = None
    delete_description: str | None = None
    permissions_by_method: dict[str, str] = field(default_factory=dict)

    def get(self, request: Request, record_id: str) -> Any:
        """The organization's record `record_id`, or the platform's 404 naming it."""
        return scoped_get(
            self.rows(),
            organization=request.auth.organization,
            resource_type=self.object_type,
            resource_id=record_id,
        )


class ResourceCollectionView(PlatformAPIView):
    resource: Resource

    def before_read(self, request: Request) -> None:
        """Bring what a read shows up to date (a widget's buffered view counts)."""

    def get(self, request: Request) -> Response:
        self.before_read(request)
        resource = self.resource
        rows = resource.select(
            organization=request.auth.organization, **resource.filters.filters(request.query_params)
        )
        return render_list(request, rows, resource.serializer, resource.sorts)

    def post(self, request: Request) -> Response:
        resource = self.resource
        serializer = resource.write_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        record = resource.create(
            RequestContext.from_request(request), request.auth.organization, serializer.validated_data
        )
        return Response(resource.serializer(record).data, status=status.HTTP_201_CREATED)


class ResourceDetailView(PlatformAPIView):
    resource: Resource

    def record(self, request: Request, **kwargs: str) -> Any:
        (record_id,) = kwargs.values()  # the URL's one parameter, whatever its name (`product_id`, `code_id`)
        return self.resource.get(request, record_id)

    def before_read(self, request: Request, record: Any) -> None:
        """Bring what a read shows up to date (a widget's buffered view counts)."""

    def check_update(self, request: Request) -> None:
        """Refuse what a PATCH may never change, before the body is validated."""

    def get(self, request: Request, **kwargs: str) -> Response:
        record = self.record(request, **kwargs)
        self.before_read(request, record)
        return Response(self.resource.serializer(record).data)

    def patch(self, request: Request, **kwargs: str) -> Response:
        resource = self.resource
        record = self.record(request, **kwargs)
        self.check_update(request)
        serializer = (resource.update_serializer or resource.write_serializer)(
            data=request.data, partial=True
        )
        serializer.is_valid(raise_exception=True)
        record = resource.update(RequestContext.from_request(request), record, serializer.validated_data)
        return Response(resource.serializer(record).data)

    def delete(self, request: Request, **kwargs: str) -> Response:
        record = self.record(request, **kwargs)
        self.resource.delete(RequestContext.from_request(request), record)
        return Response({"object": self.resource.object_type, "id": record.pk, "deleted": True})


def resource_views(
    resource: Resource,
    *,
    collection: type[ResourceCollectionView] = ResourceCollectionView,
    detail: type[ResourceDetailView] = ResourceDetailView,
) -> tuple[type[ResourceCollectionView], type[ResourceDetailView]]:
    """The collection and record views of `resource`, with their OpenAPI operations."""
    ops, tags, name = resource.operations, [resource.tag], resource.schema_name
    attributes = {"resource": resource, "permissions_by_method": resource.permissions_by_method}
    collection_view = extend_schema_view(
        get=extend_schema(
            tags=tags,
            operation_id=f"{ops}_list",
            parameters=[*LIST_PARAMETERS, *resource.list_parameters],
            responses={200: list_of(f"{name}List", resource.serializer(many=True)), **ERRORS},
        ),
        post=extend_schema(
            tags=tags,
            operation_id=f"{ops}_create",
            request=resource.write_serializer,
            parameters=[IDEMPOTENCY_HEADER],
            responses={201: resource.serializer, **ERRORS},
        ),
    )(type(f"{name}CollectionView", (collection,), {**attributes, "__module__": collection.__module__}))
    delete_schema: dict[str, Any] = {"responses": {200: deleted(f"{name}Deleted"), **ERRORS}}
    if resource.delete_description:
        delete_schema["description"] = resource.delete_description
    detail_view = extend_schema_view(
        get=extend_schema(
            tags=tags, operation_id=f"{ops}_retrieve", responses={200: resource.serializer, **ERRORS}
        ),
        patch=extend_schema(
            tags=tags,
            operation_id=f"{ops}_update",
            request=resource.update_serializer or resource.write_serializer,
            parameters=[IDEMPOTENCY_HEADER],
            responses={200: resource.serializer, **ERRORS},
        ),
        delete=extend_schema(tags=tags, operation_id=f"{ops}_delete", **delete_schema),
    )(type(f"{name}DetailView", (detail,), {**attributes, "__module__": detail.__module__}))
    return collection_view, detail_view
