from decimal import Decimal

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Q
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join

from chains.evm import is_address, to_checksum_address
from chains.incidents import incidents_resolve
from chains.keys import OwnerKind, owner_of
from chains.models import ChainCursor, Incident, OutboxTx
from chains.registry import chain_get
from chains.tokens import token_get
from core.admin import moment, pretty_json, short_hex
from ledger.models import Entry
from orders import lifecycle, states
from orders.models import (
    DepositTx,
    Inventory,
    InventoryRefill,
    Order,
    OrderStatusChange,
    RefundTx,
    RelayTx,
    StuckOrder,
    UnattributedDeposit,
)
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


def in_units(chain_id: int, token_address: str, amount) -> str:
    """`amount` (smallest units) as the token's whole units and symbol, e.g. "10.5 dUSDC"."""
    token = token_get(chain_id=chain_id, address=token_address)
    if token is None or amount is None:
        return "-"
    return f"{Decimal(int(amount)).scaleb(-token.decimals).normalize():f} {token.symbol}"


def amount_cell(chain_id: int, token_address: str, amount):
    """`10 dUSDC` with the base units beside it, as staff compare them with the chain: `(10000000)`."""
    if amount is None:
        return "-"
    return format_html(
        '<span class="nowrap">{}</span> ({})', in_units(chain_id, token_address, amount), amount
    )


def chain_label(chain_id: int | None) -> str:
    """`Devnet A (31337)`: a chain as staff name it, with the id the chain reports."""
    if chain_id is None:
        return "-"
    chain = chain_get(chain_id)
    return f"{chain.name} ({chain_id})" if chain else str(chain_id)


def tx_link(chain_id: int, tx_hash: str):
    """A transaction's hash, shortened; a link to the chain's explorer where it has one (devnets do not)."""
    chain = chain_get(chain_id)
    href = f"{chain.explorer_url}/tx/{tx_hash}" if chain and chain.explorer_url and not chain.devnet else None
    return short_hex(tx_hash, href=href)


def json_cell(field: str, description: str | None = None):
    """A read-only admin field showing a JSON column of the order, indented."""

    @admin.display(description=description or field)
    def cell(self, order: Order):
        return pretty_json(getattr(order, field))

    return cell


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


class RefundToForm(forms.ModelForm):
    class Meta:
        model = UnattributedDeposit
        fields = ("refund_to",)

    def clean_refund_to(self):
        value = (self.cleaned_data.get("refund_to") or "").strip()
        if not is_address(value) or int(value, 16) == 0:
            raise forms.ValidationError("Enter the address to refund to: 0x and 40 hex characters, not zero.")
        return to_checksum_address(value)


@admin.register(UnattributedDeposit)
class UnattributedDepositAdmin(admin.ModelAdmin):
    """Deposits whose sender is unknown (a contract wallet's internal payment, seen by balance). They count like
    any payment; a refund of one goes to its order's refundAddress, else waits here: enter the address to refund
    to and save (recorded in the admin's history), and the order's settlement sends it."""

    form = RefundToForm
    list_display = ("id", "order", "amount_shown", "refund_reason", "refund_to")
    list_filter = ("chain",)
    search_fields = ("=order__id", "=tx_hash")
    fields = (
        "order",
        "chain",
        "tx_hash",
        "block_number",
        "amount_shown",
        "counted",
        "refund_reason",
        "refund_amount",
        "order_refund_address",
        "refund_to",
    )
    readonly_fields = (
        "order",
        "chain",
        "tx_hash",
        "block_number",
        "amount_shown",
        "counted",
        "refund_reason",
        "refund_amount",
        "order_refund_address",
    )

    def get_queryset(self, request):
        unknown = Q(from_address__isnull=True) | Q(from_address="")
        return super().get_queryset(request).filter(unknown, deposit__isnull=False).select_related("order")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="amount")
    def amount_shown(self, deposit: DepositTx):
        return in_units(
            deposit.chain, deposit.token_address or deposit.order.src_token_address, deposit.amount
        )

    @admin.display(description="the order's refundAddress")
    def order_refund_address(self, deposit: DepositTx):
        return deposit.order.refund_address or "-"

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        actor = f"staff:{request.user.get_username()}"
        incidents_resolve(
            incident_ids=list(
                Incident.objects.filter(
                    kind=Incident.Kind.UNATTRIBUTED, subject=f"order-deposit:{obj.pk}"
                ).values_list("pk", flat=True)
            ),
            actor=actor,
        )
        settle_order_task.delay(str(obj.order_id), actor=actor)
        self.message_user(
            request, f"Deposit {obj.pk} is refunded to {obj.refund_to} if its order must refund it."
        )


class InventoryForm(forms.ModelForm):
    class Meta:
        model = Inventory
        fields = (
            "chain_id",
            "token",
            "low_mark",
            "target",
            "max_order",
            "max_outstanding",
            "refill_chain_id",
            "refill_token",
            "enabled",
        )

    def clean(self):
        data = super().clean()
        for field in ("chain_id", "refill_chain_id"):
            if data.get(field) is not None and chain_get(data[field]) is None:
                self.add_error(field, f"Chain {data[field]} is not in the registry (manage.py chains add).")
        for field in ("token", "refill_token"):
            value = (data.get(field) or "").strip()
            if value and not is_address(value):
                self.add_error(
                    field, "Enter a token address: 0x and 40 hex characters (the zero address: the coin)."
                )
            elif value:
                data[field] = value.lower()
        for field in ("low_mark", "target", "max_order", "max_outstanding"):
            value = str(data.get(field, "")).strip()
            if not value.isdigit():
                self.add_error(field, "Enter a whole number of the token's smallest unit, 0 or more.")
                data.pop(field, None)
            else:
                data[field] = int(value)
        if "target" in data and "low_mark" in data and data["target"] < data["low_mark"]:
            self.add_error(
                "target", "The target is what a refill brings the stock back to: at least the low mark."
            )
        return data


class InventoryRefillInline(admin.TabularInline):
    model = InventoryRefill
    fields = ("id", "status", "amount", "fill_tx", "refund_tx", "error", "created_at", "finished_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-pk",)
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).order_by("-pk")


@admin.register(Inventory)
class InventoryAdmin(admin.ModelAdmin):
    """The solver's stock per chain and token: its marks and limits (staff set them), what is fronted and not yet
    swept, and its refills through the relay provider."""

    form = InventoryForm
    list_display = ("chain_id", "token_short", "enabled", "marks", "limits", "outstanding", "last_refill")
    list_display_links = ("chain_id", "token_short")
    readonly_fields = ("stock_now", "updated_at")  # a row per chain and token: no filter, the list fits
    inlines = [InventoryRefillInline]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("fronts", "refills")

    @admin.display(description="token", ordering="token")
    def token_short(self, inventory: Inventory):
        return short_hex(inventory.token)

    @admin.display(description="low / target")
    def marks(self, inventory: Inventory) -> str:
        return f"{inventory.low_mark} / {inventory.target}"

    @admin.display(description="max order / outstanding")
    def limits(self, inventory: Inventory) -> str:
        return f"{inventory.max_order} / {inventory.max_outstanding}"

    @admin.display(description="fronted, not yet swept")
    def outstanding(self, inventory: Inventory) -> int:
        return sum(int(f.amount) for f in inventory.fronts.all() if f.swept_at is None)

    @admin.display(description="last refill")
    def last_refill(self, inventory: Inventory) -> str:
        refills = sorted(inventory.refills.all(), key=lambda r: r.pk)
        return f"{refills[-1].status} · {refills[-1].amount}" if refills else "-"

    @admin.display(description="stock on chain now")
    def stock_now(self, inventory: Inventory) -> str:
        from orders.inventory import solver_balance, stock

        if inventory.pk is None:
            return "-"
        balance = solver_balance(inventory)
        if balance is None:
            return "the solver's balance cannot be read now (no node answered, or no solver is configured)"
        now = stock(inventory, balance)
        return (
            f"the solver holds {now.balance}; {now.committed} is on its way out; {now.available} is left to front; "
            f"{now.outstanding} is fronted and not yet swept"
        )
