"""The checkout's records for staff, read-only: writes go through the API (validated, audited, counted)."""

from django.contrib import admin
from django.utils.html import format_html

from checkout.models import (
    CheckoutSession,
    DiscountCode,
    PaymentLink,
    PaymentLinkItem,
    Transaction,
    Widget,
)
from core.admin import ReadOnlyModelAdmin


class PaymentLinkItemInline(admin.TabularInline):
    model = PaymentLinkItem
    fields = ("name", "amount", "quantity", "sort_order")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(PaymentLink)
class PaymentLinkAdmin(ReadOnlyModelAdmin):
    list_display = (
        "name",
        "short_code",
        "organization",
        "amount",
        "chain_id",
        "current_uses",
        "max_uses",
        "is_active",
        "deleted_at",
        "created_at",
    )
    list_filter = ("is_active", "chain_id", "fee_on_top", "organization")
    search_fields = ("id", "name", "short_code", "organization__slug", "recipient_address")
    list_select_related = ("organization",)
    inlines = [PaymentLinkItemInline]


@admin.register(CheckoutSession)
class CheckoutSessionAdmin(ReadOnlyModelAdmin):
    # What fits a 1280 px window; the page of each session has every field.
    list_display = ("id", "created_through", "organization", "status")  # newest first (the model's ordering)
    list_filter = ("created_through", "status", "chain_id", "organization")
    search_fields = ("id", "client_reference_id", "tx_hash", "payer_address", "payment_link__short_code")
    list_select_related = ("organization", "payment_link")
    exclude = ("customer_email", "customer_name")  # personal data: not shown to staff by default


@admin.register(DiscountCode)
class DiscountCodeAdmin(ReadOnlyModelAdmin):
    list_display = (
        "code",
        "organization",
        "type",
        "value",
        "current_uses",
        "reserved_uses",
        "max_uses",
        "is_active",
        "expires_at",
    )
    list_filter = ("type", "is_active", "organization")
    search_fields = ("id", "code", "organization__slug")
    list_select_related = ("organization",)


@admin.register(Transaction)
class TransactionAdmin(ReadOnlyModelAdmin):
    list_display = (
        "id",
        "organization",
        "status",
        "amount",
        "amount_usd",
        "chain_id",
        "source_chain_id",
        "tx_hash",
        "created_at",
        "completed_at",
    )
    list_filter = ("status", "chain_id", "source_chain_id", "organization")
    search_fields = ("id", "tx_hash", "from_address", "order_id", "session__id", "payment_link__short_code")
    list_select_related = ("organization",)


@admin.register(Widget)
class WidgetAdmin(ReadOnlyModelAdmin):
    list_display = (
        "name",
        "organization",
        "widget_type",
        "short_code",
        "is_active",
        "current_views",
        "page",
        "created_at",
    )
    list_filter = ("widget_type", "is_active", "organization")
    search_fields = ("id", "name", "short_code", "organization__slug")
    list_select_related = ("organization",)

    @admin.display(description="Page")
    def page(self, obj: Widget) -> str:
        return format_html('<a href="/widgets/{}" target="_blank" rel="noopener">open</a>', obj.short_code)
