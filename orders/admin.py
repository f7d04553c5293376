from decimal import Decimal

from django.conf import settings
from django.contrib import admin
from django.utils.html import format_html

from chains.models import ChainCursor
from chains.registry import chain_get
from chains.tokens import token_get
from core.admin import ReadOnlyModelAdmin
from orders.models import CheckoutSession, DepositTx, Order, RefundTx, RelayTx

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
    fields = ("chain", "from_address", "transaction", "block_number", "confirmations", "token_address",
              "units", "amount", "counted", "refund_reason", "refund_amount", "created_at")  # fmt: skip
    readonly_fields = ("transaction", "confirmations", "units")

    @admin.display(description="transaction")
    def transaction(self, deposit: DepositTx):
        chain = chain_get(deposit.chain)
        if chain is not None and chain.explorer_url and not chain.devnet:
            return format_html(
                '<a href="{}/tx/{}">{}</a>', chain.explorer_url, deposit.tx_hash, deposit.tx_hash
            )
        return deposit.tx_hash  # devnets have no explorer: the hash itself

    @admin.display(description="confirmations")
    def confirmations(self, deposit: DepositTx):
        cursor = ChainCursor.objects.filter(pk=deposit.chain).first()
        if cursor is None or cursor.head is None or deposit.block_number is None:
            return "-"
        return cursor.head - deposit.block_number + 1

    @admin.display(description="in token units")
    def units(self, deposit: DepositTx):
        token = token_get(chain_id=deposit.chain, address=deposit.token_address)
        if token is None:
            return "-"
        return f"{Decimal(int(deposit.amount)).scaleb(-token.decimals).normalize():f} {token.symbol}"


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
class CheckoutSessionAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "status", "organization", "client_reference_id", "expires_at", "created_at")
    list_filter = ("status", "organization")
    search_fields = ("=id", "client_reference_id")
    list_select_related = ("organization",)
    readonly_fields = [f.name for f in CheckoutSession._meta.fields]
