"""An order's page for staff: its deposits, relay and refund transactions, status changes, postings and outbox
rows, and the actions on it; the stuck orders' list."""

from django.contrib import admin, messages
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join

from chains.keys import OwnerKind, owner_of
from chains.models import ChainCursor, OutboxTx
from core.admin import moment, short_hex
from ledger.models import Entry
from orders import lifecycle, states
from orders.admin.cells import ReadOnlyInline, amount_cell, chain_label, json_cell, tx_link
from orders.models import (
    DepositTx,
    Order,
    OrderStatusChange,
    RefundTx,
    RelayTx,
    StuckOrder,
)
from orders.tasks import settle_order_task


class DepositTxInline(ReadOnlyInline):
    model = DepositTx
    fields = (
        "when",
        "sender",
        "transaction",
        "block_number",
        "confirmations",
        "received",
        "counted",
        "refund_reason",
        "refunded",
    )
    readonly_fields = ("when", "sender", "transaction", "confirmations", "received", "refunded")

    @admin.display(description="when (UTC)")
    def when(self, deposit: DepositTx):
        return moment(deposit.created_at)

    @admin.display(description="from")
    def sender(self, deposit: DepositTx):
        return short_hex(deposit.from_address)

    @admin.display(description="transaction")
    def transaction(self, deposit: DepositTx):
        return tx_link(deposit.chain, deposit.tx_hash)

    @admin.display(description="confirmations")
    def confirmations(self, deposit: DepositTx):
        cursor = ChainCursor.objects.filter(pk=deposit.chain).first()
        if cursor is None or cursor.head is None or deposit.block_number is None:
            return "-"
        return cursor.head - deposit.block_number + 1

    @admin.display(description="amount")
    def received(self, deposit: DepositTx):
        return amount_cell(deposit.chain, deposit.token_address, deposit.amount)

    @admin.display(description="refund amount")
    def refunded(self, deposit: DepositTx):
        return amount_cell(deposit.chain, deposit.token_address, deposit.refund_amount)


class RelayTxInline(ReadOnlyInline):
    model = RelayTx
    fields = ("when", "on_chain", "transaction", "status")
    readonly_fields = ("when", "on_chain", "transaction")

    @admin.display(description="chain")
    def on_chain(self, relay: RelayTx):
        return chain_label(relay.chain)

    @admin.display(description="when (UTC)")
    def when(self, relay: RelayTx):
        return moment(relay.created_at)

    @admin.display(description="transaction")
    def transaction(self, relay: RelayTx):
        return tx_link(relay.chain, relay.tx_hash)


class RefundTxInline(ReadOnlyInline):
    model = RefundTx
    fields = ("when", "on_chain", "transaction", "deposit", "refunded", "status")
    readonly_fields = ("when", "on_chain", "transaction", "refunded")

    @admin.display(description="chain")
    def on_chain(self, refund: RefundTx):
        return chain_label(refund.chain)

    @admin.display(description="when (UTC)")
    def when(self, refund: RefundTx):
        return moment(refund.created_at)

    @admin.display(description="transaction")
    def transaction(self, refund: RefundTx):
        return tx_link(refund.chain, refund.tx_hash)

    @admin.display(description="amount")
    def refunded(self, refund: RefundTx):
        token = refund.deposit.token_address if refund.deposit else refund.order.src_token_address
        return amount_cell(refund.chain, token, refund.amount)


class StatusChangeInline(ReadOnlyInline):
    """Every transition of the order: when, from, to, why and who."""

    model = OrderStatusChange
    fields = ("when", "from_status", "to_status", "reason", "actor")
    readonly_fields = ("when",)
    verbose_name_plural = "status history"

    @admin.display(description="when (UTC)")
    def when(self, change: OrderStatusChange):
        return moment(change.created_at)


JSON_FIELDS = ("settlement", "payload", "metadata", "fee", "onramp_metadata")


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "type",
        "status",
        "source_chain",
        "destination_chain",
        "price",
        "organization",
        "created_at",
    )
    list_filter = ("status", "type", "src_chain", "dst_chain")
    search_fields = (
        "=id",
        "global_address",
        "recipient_address",
        "creator_address",
        "client_reference_id",
        "vendor_b_payment_intent_id",
    )
    list_select_related = ("organization",)
    date_hierarchy = "created_at"
    inlines = [StatusChangeInline, DepositTxInline, RelayTxInline, RefundTxInline]
    # Every field, read-only; the JSON documents indented, amounts in token units beside base units.
    fields = [
        "session",
        *[
            {"src_chain": "source_chain", "dst_chain": "destination_chain", "status": "status_explained"}.get(
                f.name, f.name
            )
            for f in Order._meta.fields
            if f.name not in (*JSON_FIELDS, "src_amount", "checkout_session_id")
        ],
        "price",
        "delivered",
        "fee_shown",
        "settlement_shown",
        "payload_shown",
        "metadata_shown",
        "onramp_metadata_shown",
        "outbox_transactions",
        "postings",
    ]
    readonly_fields = fields
    actions = ["retry_settlement", "refund_now"]

    def has_add_permission(self, request):
        return False  # orders come from the order interface, with their validation

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="checkout session")
    def session(self, order: Order):
        """The checkout session the order pays: the order interface's (`checkout_session_id`) or the
        merchant's `cs_` session (its id is in the order's metadata). Both are the checkout's one session, whose
        admin page is reached by URL name, not import."""
        session_id = order.checkout_session_id or (order.metadata or {}).get("checkoutSessionId")
        if not session_id:
            return "-"
        try:
            url = reverse("admin:checkout_checkoutsession_change", args=[session_id])
        except NoReverseMatch:
            return session_id
        return format_html('<a href="{}">{}</a>', url, session_id)

    @admin.display(description="status")
    def status_explained(self, order: Order):
        """The status, what it means and where it may go, from the declared machine (orders.states)."""
        state = states.MACHINE.get(order.status)
        if state is None:
            return order.status
        moves = ", ".join(sorted(state.to)) or "nowhere: final"
        return format_html(
            '<strong>{}</strong><div class="help">{}; may move to {}</div>',
            order.status,
            state.meaning,
            moves,
        )

    @admin.display(description="source chain", ordering="src_chain")
    def source_chain(self, order: Order):
        return chain_label(order.src_chain)

    @admin.display(description="destination chain", ordering="dst_chain")
    def destination_chain(self, order: Order):
        return chain_label(order.dst_chain)

    @admin.display(description="price (srcAmount)")
    def price(self, order: Order):
        return amount_cell(order.src_chain, order.src_token_address, order.src_amount)

    @admin.display(description="delivered")
    def delivered(self, order: Order):
        return amount_cell(
            order.dst_chain, order.dst_token_address, (order.settlement or {}).get("dstAmount")
        )

    fee_shown = json_cell("fee")
    settlement_shown = json_cell("settlement")
    payload_shown = json_cell("payload")
    metadata_shown = json_cell("metadata")
    onramp_metadata_shown = json_cell("onramp_metadata", "onramp metadata")

    @admin.display(description="outbox transactions")
    def outbox_transactions(self, order: Order):
        rows = OutboxTx.objects.filter(owner=owner_of(OwnerKind.ORDER, order.pk)).order_by("created_at")
        return (
            format_html_join(
                "",
                '<div><a href="{}">{}</a>: {} on {} {} {}</div>',
                (
                    (
                        reverse("admin:chains_outboxtx_change", args=[tx.pk]),
                        tx.parsed_key.what,
                        tx.status,
                        chain_label(tx.chain_id),
                        short_hex(tx.tx_hash) if tx.tx_hash else "",
                        tx.error,
                    )
                    for tx in rows
                ),
            )
            or "-"
        )

    @admin.display(description="ledger postings")
    def postings(self, order: Order):
        entries = (
            Entry.objects.filter(posting__order_id=order.pk)
            .select_related("posting", "account")
            .order_by("posting_id", "pk")
        )
        return (
            format_html_join(
                "",
                '<div><a href="{}">{}</a> {}: {} {} {} {}</div>',
                (
                    (
                        reverse("admin:ledger_posting_change", args=[e.posting_id]),
                        e.posting.kind,
                        e.side,
                        e.account.kind,
                        short_hex(e.account.ref),
                        amount_cell(e.account.chain_id, e.account.token, e.amount),
                        f"on {chain_label(e.account.chain_id)}",
                    )
                    for e in entries
                ),
            )
            or "-"
        )

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
            if lifecycle.order_fail(order=order, error=f"REFUNDED_BY_STAFF: {actor}", actor=actor):
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
    """Orders holding money with no progress for SETTLEMENT_STUCK_SECONDS: in a settlement state, or owing a
    deposit back whatever their status (also logged at WARNING and driven again every minute)."""

    list_display = (
        "id",
        "type",
        "status",
        "status_changed_at",
        "error_details",
        "src_chain",
        "dst_chain",
        "organization",
    )
    date_hierarchy = None

    def get_queryset(self, request):
        from orders.settlement import orders_stuck

        return orders_stuck().select_related("organization")
