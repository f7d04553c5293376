"""Widgets' rules: `config` validated for the widget's type (checkout, swap, NFT, deposit) and `theme`,
the deposit options a deposit widget offers, and every write and count of widgets (create, update,
delete, views, interactions and completions by UTC day). The API is `checkout.widget_api`; the page
`checkout.widget_page`."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone
from rest_framework import serializers

from chains.fields import AddressField, PayeeAddressField, SupportedChainIdField, TokenAmountField
from chains.models import Token
from chains.tokens import tokens_by_chain_and_address
from checkout.models import Transaction, Widget, WidgetEvent
from checkout.selectors import rate, sum_usd
from checkout.visits import widget_view_record
from core.errors import NOTHING_TO_UPDATE, ErrorCode, InvalidRequest
from core.fields import (
    StrictBooleanField,
    StrictIntegerField,
    StrictSerializer,
)
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.inputs import check_amounts_worth, check_token
from platform_api.models import Organization
from platform_api.signals import record_write

MAX_DEPOSIT_OPTIONS = 20

# --- config and theme -----------------------------------------------------------------------


class ConfigSerializer(StrictSerializer):
    unknown_fields_last = True  # another type's config is missing fields before it has unknown ones


class CheckoutConfigSerializer(ConfigSerializer):
    recipient_address = PayeeAddressField()
    destination_token = AddressField()
    destination_chain_id = SupportedChainIdField()
    amount = TokenAmountField(
        required=False, allow_null=True, help_text="Empty: the payer enters the amount."
    )


class SwapConfigSerializer(ConfigSerializer):
    src_token = AddressField()
    src_chain_id = SupportedChainIdField()
    dst_token = AddressField()
    dst_chain_id = SupportedChainIdField()


class NftConfigSerializer(ConfigSerializer):
    collection_address = AddressField()
    chain_id = SupportedChainIdField()
    token_id = TokenAmountField(allow_zero=True, help_text="Decimal string.")


class DepositConfigSerializer(ConfigSerializer):
    recipient_address = PayeeAddressField()
    accepted_tokens = serializers.ListField(
        child=AddressField(), min_length=1, max_length=MAX_DEPOSIT_OPTIONS
    )
    accepted_chains = serializers.ListField(
        child=SupportedChainIdField(), min_length=1, max_length=MAX_DEPOSIT_OPTIONS
    )


CONFIG_SERIALIZERS: dict[str, type[serializers.Serializer]] = {
    Widget.Type.CHECKOUT: CheckoutConfigSerializer,
    Widget.Type.SWAP: SwapConfigSerializer,
    Widget.Type.NFT: NftConfigSerializer,
    Widget.Type.DEPOSIT: DepositConfigSerializer,
}


class ThemeSerializer(StrictSerializer):
    primary_color = serializers.RegexField(
        r"^#[0-9a-fA-F]{6}$", required=False, error_messages={"invalid": "Must be a colour such as #1a2b3c."}
    )
    border_radius = StrictIntegerField(required=False, min_value=0, max_value=48, help_text="Pixels.")
    font_family = (
        serializers.RegexField(  # it is written into the page's CSS: no quotes, semicolons or braces
            r"^[A-Za-z0-9 ,\-]{1,100}$",
            required=False,
            error_messages={
                "invalid": "Font names: letters, digits, spaces, commas and hyphens, at most 100."
            },
        )
    )
    dark_mode = StrictBooleanField(required=False)


def deposit_options(config: dict[str, Any]) -> list[tuple[int, str, Token]]:
    """(chain, address, token) a deposit widget takes: each accepted token on each accepted chain it is on; one query."""
    pairs = [
        (chain_id, token) for chain_id in config["accepted_chains"] for token in config["accepted_tokens"]
    ]
    registry = tokens_by_chain_and_address(pairs)
    return [
        (chain_id, address, registry[(chain_id, address.lower())])
        for chain_id, address in pairs
        if (chain_id, address.lower()) in registry
    ]


def clean_config(widget_type: str, raw: Any) -> dict[str, Any]:
    """`config` for `widget_type`, as stored (amounts and token ids as strings); 400 with `config.<field>`."""
    serializer = CONFIG_SERIALIZERS[widget_type](data=raw)
    if not serializer.is_valid():
        raise serializers.ValidationError({"config": serializer.errors})
    config = dict(serializer.validated_data)
    if widget_type == Widget.Type.CHECKOUT:
        check_token(
            config["destination_chain_id"], config["destination_token"], param="config.destination_token"
        )
        check_amounts_worth(
            config["destination_chain_id"],
            config["destination_token"],
            {"config.amount": config.get("amount")},
        )
        config["amount"] = str(config["amount"]) if config.get("amount") is not None else None
    elif widget_type == Widget.Type.SWAP:
        check_token(config["src_chain_id"], config["src_token"], param="config.src_token")
        check_token(config["dst_chain_id"], config["dst_token"], param="config.dst_token")
        if (config["src_chain_id"], config["src_token"].lower()) == (
            config["dst_chain_id"],
            config["dst_token"].lower(),
        ):
            raise InvalidRequest("'config.dst_token': a swap needs two tokens.", field="config.dst_token")
    elif widget_type == Widget.Type.NFT:
        config["token_id"] = str(config["token_id"])
    else:
        config["accepted_tokens"] = list(dict.fromkeys(config["accepted_tokens"]))
        config["accepted_chains"] = list(dict.fromkeys(config["accepted_chains"]))
        if not deposit_options(config):
            raise InvalidRequest(
                "'config.accepted_tokens': none of these tokens is in the registry on the accepted chains.",
                field="config.accepted_tokens",
            )
    return config


# --- services -------------------------------------------------------------------------------


@transaction.atomic
def widget_create(*, ctx: RequestContext, organization: Organization, data: dict[str, Any]) -> Widget:
    widget = Widget.objects.create(
        organization=organization,
        name=data["name"],
        description=data.get("description", ""),
        widget_type=data["widget_type"],
        config=clean_config(data["widget_type"], data["config"]),
        theme=dict(data.get("theme") or {}),
        is_active=data.get("is_active", True),
    )
    record_write(
        ctx=ctx,
        event_type=AuditName.WIDGET_CREATED,
        resource_type="widget",
        resource_id=widget.id,
        created=True,
    )
    return widget


@transaction.atomic
def widget_update(*, ctx: RequestContext, widget: Widget, data: dict[str, Any]) -> Widget:
    """Any create field; a new `widget_type` needs a `config` of that type (the old one is checked against it)."""
    if not data:
        raise InvalidRequest(NOTHING_TO_UPDATE, code=ErrorCode.NOTHING_TO_UPDATE)
    widget = Widget.objects.select_for_update().get(pk=widget.pk)
    widget_type = data.get("widget_type", widget.widget_type)
    if "config" in data or "widget_type" in data:
        widget.config = clean_config(widget_type, data.get("config", widget.config))
    widget.widget_type = widget_type
    for name in ("name", "description", "is_active"):
        if name in data:
            setattr(widget, name, data[name])
    if "theme" in data:
        widget.theme = dict(data["theme"])
    widget.updated_at = timezone.now()
    widget.save()
    record_write(ctx=ctx, event_type=AuditName.WIDGET_UPDATED, resource_type="widget", resource_id=widget.id)
    return widget


def widget_event_record(widget_id: str, kind: str, session_id: str = "") -> None:
    """One count; a session's interaction or completion counts once however often the hook runs."""
    if kind == WidgetEvent.Kind.VIEW:  # buffered in Redis, written by beat (checkout/visits.py)
        widget_view_record(widget_id)
        return
    try:
        with transaction.atomic():
            WidgetEvent.objects.create(widget_id=widget_id, kind=kind, session_id=session_id)
    except IntegrityError:
        return  # counted already


@transaction.atomic
def widget_delete(*, ctx: RequestContext, widget: Widget) -> None:
    """Gone with its counts; sessions started from it keep their payments (their `widget` becomes empty)."""
    Widget.objects.filter(pk=widget.pk).delete()
    record_write(ctx=ctx, event_type=AuditName.WIDGET_DELETED, resource_type="widget", resource_id=widget.id)


# --- selectors ------------------------------------------------------------------------------


def widget_list(
    *,
    organization: Organization,
    search: str | None = None,
    widget_type: str | None = None,
    active: bool | None = None,
):
    widgets = Widget.objects.filter(organization=organization)
    if search:
        widgets = widgets.filter(Q(name__icontains=search) | Q(short_code__icontains=search))
    if widget_type:
        widgets = widgets.filter(widget_type=widget_type)
    if active is not None:
        widgets = widgets.filter(is_active=active)
    return widgets


def widget_stats(*, widget: Widget, days: int) -> dict[str, Any]:
    """Views, interactions (checkouts started) and completions over the last `days`, by UTC day; one grouped query."""
    since = timezone.now() - timedelta(days=days)
    rows = (
        WidgetEvent.objects.filter(widget=widget, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("day", "kind")
        .annotate(n=Count("pk"))
        .order_by()
    )
    daily: dict[str, dict[str, int]] = {}
    totals = {"views": 0, "interactions": 0, "completions": 0}
    plural = {"view": "views", "interaction": "interactions", "completion": "completions"}
    for row in rows:
        entry = daily.setdefault(row["day"].isoformat(), {"views": 0, "interactions": 0, "completions": 0})
        entry[plural[row["kind"]]] = row["n"]
        totals[plural[row["kind"]]] += row["n"]
    revenue = Transaction.objects.filter(
        session__widget=widget, status=Transaction.Status.COMPLETED, completed_at__gte=since
    ).aggregate(usd=sum_usd())["usd"]
    return {
        "object": "widget_stats",
        "widget_id": widget.id,
        "days": days,
        **totals,
        "interaction_rate": rate(totals["interactions"], totals["views"]),
        "conversion_rate": rate(totals["completions"], totals["views"]),
        "revenue_usd": f"{revenue or Decimal(0):.2f}",
        "daily": [{"date": day, **counts} for day, counts in sorted(daily.items())],
    }


# --- views ----------------------------------------------------------------------------------
