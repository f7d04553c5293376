"""Widgets: embeddable cards at `/widgets/{short_code}` that start a checkout (checkout, deposit) or show a
swap or an NFT; `config` is validated for the widget's type, `theme` styles the card.

The page itself (and the sessions it starts) is `checkout.widget_page`, the rules `checkout.widgets`; this
module is the merchant's API: create, list, read, update, delete, and the counts of views, interactions
and completions by UTC day.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from checkout.models import Widget
from checkout.selectors import MAX_DAYS
from checkout.visits import views_settled
from checkout.widgets import (
    ThemeSerializer,
    widget_create,
    widget_delete,
    widget_list,
    widget_stats,
    widget_update,
)
from core import openapi
from core.fields import (
    EpochMillisField,
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
)
from platform_api.api import PlatformAPIView
from platform_api.filters import BoolFilter, ChoiceFilter, FilterSerializer, TextFilter
from platform_api.pagination import parse_positive_int
from platform_api.resources import Resource, ResourceCollectionView, ResourceDetailView, resource_views
from platform_api.views import ERRORS

WIDGET_SORTS = ("created_at", "updated_at", "name", "current_views")


class WidgetWriteSerializer(StrictSerializer):
    name = StrictCharField(max_length=100)
    widget_type = serializers.ChoiceField(choices=Widget.Type.values)
    config = serializers.JSONField(help_text="By widget_type: see the Widgets section of the docs.")
    description = StrictCharField(max_length=500, required=False, allow_blank=True)
    theme = ThemeSerializer(required=False)
    is_active = StrictBooleanField(required=False, help_text="Update only.")

    def validate_config(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return value


class WidgetSerializer(serializers.Serializer):
    object = serializers.SerializerMethodField()
    id = serializers.CharField(help_text="Prefix `wgt_`.")
    name = serializers.CharField()
    description = serializers.CharField()
    widget_type = serializers.CharField()
    config = serializers.JSONField()
    theme = serializers.JSONField()
    short_code = serializers.CharField()
    url = serializers.SerializerMethodField(help_text="The page to embed in an iframe.")
    is_active = serializers.BooleanField()
    current_views = serializers.IntegerField()
    created_at = EpochMillisField()
    updated_at = EpochMillisField()

    def get_object(self, _obj) -> str:
        return "widget"

    def get_url(self, obj) -> str:
        return f"{settings.PUBLIC_BASE_URL}/widgets/{obj.short_code}"


DAILY = inline_serializer(
    "WidgetStatsDay",
    {
        "date": serializers.DateField(),
        "views": serializers.IntegerField(),
        "interactions": serializers.IntegerField(),
        "completions": serializers.IntegerField(),
    },
    many=True,
)


STATS = inline_serializer(
    "WidgetStats",
    {
        "object": serializers.CharField(default="widget_stats"),
        "widget_id": serializers.CharField(),
        "days": serializers.IntegerField(),
        "views": serializers.IntegerField(),
        "interactions": serializers.IntegerField(help_text="Checkouts started from the widget."),
        "completions": serializers.IntegerField(),
        "interaction_rate": serializers.FloatField(),
        "conversion_rate": serializers.FloatField(help_text="completions / views"),
        "revenue_usd": serializers.CharField(),
        "daily": DAILY,
    },
)


class WidgetFilters(FilterSerializer):
    search = TextFilter()
    widget_type = ChoiceFilter(Widget.Type.values, refusal=f"must be one of {', '.join(Widget.Type.values)}.")
    active = BoolFilter()


class _WidgetCollectionView(ResourceCollectionView):
    def before_read(self, request):
        views_settled()  # `current_views` counts the views still buffered in Redis too


class _WidgetDetailView(ResourceDetailView):
    def before_read(self, request, record):
        views_settled()
        record.refresh_from_db(fields=["current_views"])


WIDGETS = Resource(
    object_type="widget",
    operations="widgets",
    tag="Widgets",
    schema_name="Widget",
    serializer=WidgetSerializer,
    write_serializer=WidgetWriteSerializer,
    rows=Widget.objects.all,
    select=widget_list,
    filters=WidgetFilters,
    sorts=WIDGET_SORTS,
    list_parameters=[
        OpenApiParameter("sort", str, enum=list(WIDGET_SORTS)),
        openapi.text("search", description="Part of the name or short code."),
        OpenApiParameter("widget_type", str, enum=Widget.Type.values),
        OpenApiParameter("active", str, enum=["true", "false"]),
    ],
    create=lambda ctx, organization, data: widget_create(ctx=ctx, organization=organization, data=data),
    update=lambda ctx, widget, data: widget_update(ctx=ctx, widget=widget, data=data),
    delete=lambda ctx, widget: widget_delete(ctx=ctx, widget=widget),
)
WidgetCollectionView, WidgetDetailView = resource_views(
    WIDGETS, collection=_WidgetCollectionView, detail=_WidgetDetailView
)


class WidgetStatsView(PlatformAPIView):
    @extend_schema(
        operation_id="widgets_stats",
        tags=["Widgets"],
        parameters=[openapi.integer("days", minimum=1, maximum=MAX_DAYS, description="Default 30.")],
        responses={200: STATS, **ERRORS},
    )
    def get(self, request, widget_id: str):
        widget = WIDGETS.get(request, widget_id)
        days = parse_positive_int(request.query_params, "days", 30, MAX_DAYS)
        views_settled()
        return Response(widget_stats(widget=widget, days=days))
