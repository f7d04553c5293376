from django.conf import settings
from django.contrib import admin

from orders.models import CheckoutSession, DepositTx, Order, RefundTx, RelayTx, Token

_offline = [
    name
    for name, value in (("quotes", settings.QUOTE_PROVIDER), ("chain reads", settings.CHAIN_READER))
    if value == "offline"
]
if _offline:
    # Staff must never mistake development pricing for real pricing.
    admin.site.site_header = f"Checkout administration — OFFLINE providers: {', '.join(_offline)}"


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class DepositTxInline(ReadOnlyInline):
    model = DepositTx
    fields = ("chain", "from_address", "tx_hash", "amount", "created_at")


class RelayTxInline(ReadOnlyInline):
    model = RelayTx
    fields = ("chain", "tx_hash", "status", "created_at")


class RefundTxInline(ReadOnlyInline):
    model = RefundTx
    fields = ("chain", "tx_hash", "amount", "status", "created_at")


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "type",
        "status",
        "src_chain",
        "dst_chain",
        "src_amount",
        "organization",
        "created_at",
    )
    list_filter = ("status", "type", "src_chain", "dst_chain")
    search_fields = ("=id", "global_address", "recipient_address", "creator_address", "client_reference_id",
                     "vendor_b_payment_intent_id")  # fmt: skip
    list_select_related = ("organization",)
    date_hierarchy = "created_at"
    inlines = [DepositTxInline, RelayTxInline, RefundTxInline]
    readonly_fields = [f.name for f in Order._meta.fields]

    def has_add_permission(self, request):
        return False  # orders come from the order interface, with their validation

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(CheckoutSession)
class CheckoutSessionAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "organization", "client_reference_id", "expires_at", "created_at")
    list_filter = ("status", "organization")
    search_fields = ("=id", "client_reference_id")
    list_select_related = ("organization",)
    readonly_fields = [f.name for f in CheckoutSession._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Token)
class TokenAdmin(admin.ModelAdmin):
    list_display = ("symbol", "name", "chain_id", "address", "decimals", "usd_price")
    list_filter = ("chain_id",)
    search_fields = ("symbol", "name", "address")
