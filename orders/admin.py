from decimal import Decimal

from django.conf import settings
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from chains.models import ChainCursor, OutboxTx
from chains.registry import chain_get
from chains.tokens import token_get
from core.admin import ReadOnlyModelAdmin
from orders import services
from orders.models import CheckoutSession, DepositTx, Order, OrderStatusChange, RefundTx, RelayTx, StuckOrder
from orders.tasks import settle_order_task

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
        return in_units(deposit.chain, deposit.token_address, deposit.amount)


def in_units(chain_id: int, token_address: str, amount) -> str:
    """`amount` (smallest units) as the token's whole units and symbol, e.g. "10.5 dUSDC"."""
    token = token_get(chain_id=chain_id, address=token_address)
    if token is None or amount is None:
        return "-"
    return f"{Decimal(int(amount)).scaleb(-token.decimals).normalize():f} {token.symbol}"


class RelayTxInline(ReadOnlyInline):
    model = RelayTx
    fields = ("chain", "tx_hash", "status", "created_at")


class RefundTxInline(ReadOnlyInline):
    model = RefundTx
    fields = ("chain", "tx_hash", "deposit", "amount", "units", "status", "created_at")
    readonly_fields = ("units",)

    @admin.display(description="in token units")
    def units(self, refund: RefundTx):
        token = refund.deposit.token_address if refund.deposit else refund.order.src_token_address
        return in_units(refund.chain, token, refund.amount)


class StatusChangeInline(ReadOnlyInline):
    """Every transition of the order: when, from, to, why and who."""

    model = OrderStatusChange
    fields = ("created_at", "from_status", "to_status", "reason", "actor")
    verbose_name_plural = "status history"


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
    inlines = [StatusChangeInline, DepositTxInline, RelayTxInline, RefundTxInline]
    readonly_fields = ["src_amount_units", "dst_amount_units", "outbox_transactions",
                       *[f.name for f in Order._meta.fields]]  # fmt: skip
    actions = ["retry_settlement", "refund_now"]

    def has_add_permission(self, request):
        return False  # orders come from the order interface, with their validation

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="price in token units")
    def src_amount_units(self, order: Order):
        return in_units(order.src_chain, order.src_token_address, order.src_amount)

    @admin.display(description="delivered in token units")
    def dst_amount_units(self, order: Order):
        return in_units(order.dst_chain, order.dst_token_address, (order.settlement or {}).get("dstAmount"))

    @admin.display(description="outbox transactions")
    def outbox_transactions(self, order: Order):
        rows = OutboxTx.objects.filter(key__startswith=f"order:{order.pk}:").order_by("created_at")
        return format_html_join(
            "", '<div><a href="{}">{}</a>: {} on chain {} {} {}</div>',
            ((reverse("admin:chains_outboxtx_change", args=[tx.pk]), tx.key.split(":", 2)[2], tx.status,
              tx.chain_id, tx.tx_hash or "", tx.error) for tx in rows),
        ) or "-"  # fmt: skip

    @admin.action(description="Retry settlement (drive the selected orders on now)")
    def retry_settlement(self, request, queryset):
        actor = f"staff:{request.user.get_username()}"
        for order in queryset:
            settle_order_task.delay(str(order.pk), actor=actor)
            self.log_change(request, order, "Retry settlement")
        self.message_user(request, f"Settlement of {queryset.count()} order(s) queued.")

    @admin.action(description="Refund now (fail the selected orders and return their deposits)")
    def refund_now(self, request, queryset):
        actor = f"staff:{request.user.get_username()}"
        refunded = 0
        for order in queryset:
            if services.order_fail(order=order, error=f"REFUNDED_BY_STAFF: {actor}", actor=actor):
                settle_order_task.delay(str(order.pk), actor=actor)
                self.log_change(request, order, "Refund now")
                refunded += 1
        skipped = queryset.count() - refunded
        self.message_user(request, f"{refunded} order(s) are being refunded.")
        if skipped:
            self.message_user(
                request,
                f"{skipped} order(s) were left alone: executed, expired, already failed or refunded.",
                level=messages.WARNING,
            )


@admin.register(StuckOrder)
class StuckOrderAdmin(OrderAdmin):
    """Orders in a settlement state with no progress for SETTLEMENT_STUCK_SECONDS (also logged at WARNING)."""

    list_display = ("id", "type", "status", "status_changed_at", "error_details", "src_chain", "dst_chain",
                    "organization")  # fmt: skip
    date_hierarchy = None

    def get_queryset(self, request):
        from orders.settlement import orders_stuck

        return orders_stuck().select_related("organization")


@admin.register(CheckoutSession)
class CheckoutSessionAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "status", "organization", "client_reference_id", "expires_at", "created_at")
    list_filter = ("status", "organization")
    search_fields = ("=id", "client_reference_id")
    list_select_related = ("organization",)
    readonly_fields = [f.name for f in CheckoutSession._meta.fields]
