"""The relay provider's fast fills for staff (orders/fast_fills.py): what was asked, what the provider answered,
and whether its hold was released or lost. Read-only: each is the record of a call made to the provider."""

from django.contrib import admin

from core.admin import ReadOnlyModelAdmin
from orders.models import FastFill


@admin.register(FastFill)
class FastFillAdmin(ReadOnlyModelAdmin):
    list_display = (
        "order",
        "request_id",
        "chain_id",
        "amount",
        "accepted",
        "asked_at",
        "settled_at",
        "lost_at",
    )
    list_filter = ("accepted", "chain_id")
    search_fields = ("order__id", "request_id")
    list_select_related = ("order",)
    ordering = ("-asked_at",)
    readonly_fields = (
        "order",
        "request_id",
        "chain_id",
        "token",
        "amount",
        "deposit_tx",
        "accepted",
        "refused",
        "answer",
        "asked_at",
        "settled_at",
        "lost_at",
    )
