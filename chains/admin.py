from decimal import Decimal

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import OuterRef, Subquery
from django.utils.html import format_html, format_html_join

from chains.client import node_label
from chains.incidents import incidents_resolve
from chains.models import AdoptedTx, Chain, ChainCursor, Deposit, Incident, OutboxTx, Token, WatchedAddress
from chains.registry import ChainError, chain_from_entry, chain_get
from core.admin import ReadOnlyModelAdmin


class ChainForm(forms.ModelForm):
    """The RPC URLs one per line (stored encrypted); every field checked as `manage.py chains add` checks it."""

    rpc_urls_text = forms.CharField(
        label="RPC URLs",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="One per line, in order of preference. They are stored encrypted (a provider's URL holds its key).",
    )

    explorer_url = forms.URLField(required=False, max_length=300, assume_scheme="https")

    class Meta:
        model = Chain
        exclude = ("rpc_urls", "source", "created_at", "updated_at")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["rpc_urls_text"] = "\n".join(self.instance.rpc_urls or [])
            self.fields["chain_id"].disabled = True

    def clean(self):
        data = super().clean() or {}
        if self.errors:
            return data
        urls = [line.strip() for line in (data.get("rpc_urls_text") or "").splitlines() if line.strip()]
        entry = {
            name: data[name]
            for name in (
                "chain_id",
                "name",
                "native_symbol",
                "native_decimals",
                "confirmations",
                "front_confirmations",
                "poll_interval_seconds",
                "explorer_url",
                "factory_address",
                "takes_payments",
                "devnet",
                "testnet",
                "max_fee_per_gas_gwei",
                "max_lag_blocks",
                "traces",
                "family",
                "vault_gas_threshold",
                "solver_gas_threshold",
            )
        }
        try:
            chain = chain_from_entry({**entry, "rpc_urls": urls})
        except ChainError as exc:
            raise forms.ValidationError(str(exc)) from None
        self.instance.rpc_urls = list(chain.rpc_urls)
        data["factory_address"] = chain.factory_address
        return data


@admin.register(Chain)
class ChainAdmin(admin.ModelAdmin):
    """The chain registry. Changes reach every process within a second. A chain that stops taking payments
    still settles what is in flight there; its RPC nodes show as the watcher last found them."""

    form = ChainForm
    # Fits a 1,280 px window beside the admin's navigation and the filters: the chain named with its id, the
    # watcher's state and the signers' gas in one column.
    list_display = ("chain", "payments", "blocks_to_confirm", "nodes", "health")
    list_display_links = ("chain",)
    list_filter = ("takes_payments", "devnet", "testnet", "source")
    search_fields = ("name", "=chain_id")
    readonly_fields = ("node_status", "source", "created_at", "updated_at")
    actions = ["stop_payments"]

    def get_queryset(self, request):
        """Each chain with its watcher's cursor, in the same query (the list's watcher and gas columns)."""
        cursor = ChainCursor.objects.filter(pk=OuterRef("pk"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                cursor_scanned_to=Subquery(cursor.values("scanned_to")[:1]),
                cursor_head=Subquery(cursor.values("head")[:1]),
                cursor_error=Subquery(cursor.values("last_error")[:1]),
                cursor_nodes=Subquery(cursor.values("nodes")[:1], output_field=models.JSONField()),
                cursor_gas=Subquery(cursor.values("gas")[:1], output_field=models.JSONField()),
            )
        )

    @admin.display(description="chain", ordering="chain_id")
    def chain(self, chain: Chain) -> str:
        return f"{chain.name} ({chain.chain_id})"

    @admin.display(description="confirmations", ordering="confirmations")
    def blocks_to_confirm(self, chain: Chain) -> int:
        return chain.confirmations

    @admin.display(description="watcher and gas")
    def health(self, chain: Chain):
        return format_html("<div>{}</div>{}", self.watcher(chain), self.gas(chain))

    @admin.display(description="payments", boolean=True)
    def payments(self, chain: Chain) -> bool:
        return chain.takes_payments and bool(chain.factory_address)

    @admin.display(description="RPC nodes")
    def nodes(self, chain: Chain):
        labels = [node_label(url).split("://", 1)[-1] for url in chain.rpc_urls or []]
        return format_html_join("", "<div>{}</div>", ((label,) for label in labels)) or "-"

    @admin.display(description="watcher")
    def watcher(self, chain: Chain):
        if getattr(chain, "cursor_scanned_to", None) is None:
            return "not scanned yet"
        nodes = chain.cursor_nodes or []  # type: ignore[attr-defined]
        if nodes and all(node.get("state") == "set aside" for node in nodes):
            return format_html('<strong class="errornote">{}</strong>', "every RPC node is down")
        if chain.cursor_error:  # type: ignore[attr-defined]
            return format_html('<span title="{}">last scan failed</span>', chain.cursor_error)  # type: ignore[attr-defined]
        head = chain.cursor_head  # type: ignore[attr-defined]
        return f"block {chain.cursor_scanned_to}, lag {head - chain.cursor_scanned_to if head is not None else '-'}"  # type: ignore[attr-defined]

    @admin.display(description="signers' gas")
    def gas(self, chain: Chain):
        gas = getattr(chain, "cursor_gas", None)
        if not gas:
            return ""
        thresholds = {"vault": int(chain.vault_gas_threshold), "solver": int(chain.solver_gas_threshold)}
        return format_html_join(
            "",
            "<div>{}: {} {}{}</div>",
            (
                (
                    role,
                    f"{Decimal(int(wei)) / Decimal(10) ** chain.native_decimals:,.2f}",
                    chain.native_symbol,
                    format_html(' <strong class="errornote">{}</strong>', "LOW")
                    if int(wei) < thresholds.get(role, 0)
                    else "",
                )
                for role, wei in sorted(gas.items())
            ),
        )

    @admin.display(description="RPC nodes, as the last scan found them")
    def node_status(self, chain: Chain):
        cursor = ChainCursor.objects.filter(pk=chain.chain_id).first()
        if cursor is None or not cursor.nodes:
            return "-"
        return format_html_join(
            "",
            "<div>{}: {} {}</div>",
            (
                (
                    n.get("node"),
                    n.get("state"),
                    f"(head {n['head']})" if n.get("head") is not None else n.get("reason"),
                )
                for n in cursor.nodes
            ),
        )

    def save_model(self, request, obj, form, change):
        obj.source = Chain.Source.STAFF  # the seed leaves a chain staff edited alone
        super().save_model(request, obj, form, change)

    @admin.action(description="Stop taking payments (what is in flight still settles)")
    def stop_payments(self, request, queryset):
        for chain in queryset:
            chain.takes_payments, chain.source = False, Chain.Source.STAFF
            chain.save(update_fields=["takes_payments", "source"])
            self.log_change(request, chain, "Stopped taking payments")
        self.message_user(
            request, f"{queryset.count()} chain(s) take no new payments.", level=messages.SUCCESS
        )


@admin.register(ChainCursor)
class ChainCursorAdmin(ReadOnlyModelAdmin):
    """Each chain's deposit watcher: how far it read, the head it saw, its lag and its last error."""

    list_display = ("chain_id", "name", "scanned_to", "head", "lag", "last_scan_at", "last_error")

    @admin.display(description="chain")
    def name(self, cursor: ChainCursor):
        chain = chain_get(cursor.chain_id)
        return f"{chain.name} (devnet)" if chain and chain.devnet else chain.name if chain else "-"

    @admin.display(description="lag (blocks)")
    def lag(self, cursor: ChainCursor):
        return cursor.lag


@admin.register(Deposit)
class DepositAdmin(ReadOnlyModelAdmin):
    """Every transfer the watcher saw: confirmed, orphaned by a reorg (waiting to be seen again), withdrawn,
    or of a token the registry does not list (held, never swept or refunded)."""

    list_display = (
        "tx_hash",
        "seq",
        "chain_id",
        "block_number",
        "to_address",
        "token",
        "amount",
        "owner",
        "status",
        "handled_at",
        "handler_error",
    )
    list_filter = ("status", "chain_id")
    search_fields = ("=tx_hash", "=to_address", "=from_address", "owner")


@admin.register(WatchedAddress)
class WatchedAddressAdmin(ReadOnlyModelAdmin):
    list_display = ("address", "chain_id", "owner", "watch_until")
    list_filter = ("chain_id",)
    search_fields = ("=address", "owner")


@admin.register(Token)
class TokenAdmin(admin.ModelAdmin):
    list_display = ("symbol", "name", "chain_id", "address", "decimals", "usd_price", "eip3009")
    list_filter = ("chain_id", "eip3009")
    search_fields = ("symbol", "name", "address")


@admin.register(OutboxTx)
class OutboxTxAdmin(ReadOnlyModelAdmin):
    """Every transaction the service sent or is sending, by business key; the poller moves them on."""

    list_display = (
        "key",
        "chain_id",
        "signer",
        "step",
        "funds",
        "status",
        "nonce",
        "tx_hash",
        "broadcasts",
        "error",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "step", "funds", "chain_id", "signer")
    search_fields = ("key", "=owner", "=tx_hash", "=sender", "=to")
    readonly_fields = [f.name for f in OutboxTx._meta.fields]


@admin.register(AdoptedTx)
class AdoptedTxAdmin(ReadOnlyModelAdmin):
    """Transactions of the service's signers found on a chain that the database did not hold (restored from a
    backup): the outbox key that took each as its own, or none yet (chains/outbox/adopt.py)."""

    list_display = ("chain_id", "signer", "nonce", "tx_hash", "to", "value", "claimed_by", "found_at")
    list_filter = ("chain_id", "signer")
    search_fields = ("=tx_hash", "=sender", "=to", "claimed_by")
    readonly_fields = [f.name for f in AdoptedTx._meta.fields]


class IncidentStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return (("open", "open"), ("resolved", "resolved"))

    def queryset(self, request, queryset):
        if self.value() in ("open", "resolved"):
            return queryset.filter(resolved_at__isnull=self.value() == "open")
        return queryset


@admin.register(Incident)
class IncidentAdmin(ReadOnlyModelAdmin):
    """What the money path did not decide alone. An open incident about an order holds its settlement: look,
    act (the order's "retry settlement" or "refund now"), then mark it resolved."""

    list_display = ("created_at", "state", "kind", "subject", "chain_id")
    list_filter = ("kind", "chain_id")
    search_fields = ("subject", "summary")
    readonly_fields = [f.name for f in Incident._meta.fields]
    actions = ["mark_resolved"]

    def get_list_filter(self, request):
        return (IncidentStateFilter, *self.list_filter)

    @admin.display(description="state", ordering="resolved_at")
    def state(self, incident: Incident) -> str:
        return f"resolved by {incident.resolved_by}" if incident.resolved_at else "OPEN"

    def get_actions(self, request):
        actions = super().get_actions(request)
        if not request.user.has_perm("chains.change_incident"):
            actions.pop("mark_resolved", None)
        return actions

    @admin.action(description="Mark resolved (orders they held settle again on their next retry)")
    def mark_resolved(self, request, queryset):
        actor = f"staff:{request.user.get_username()}"
        resolved = incidents_resolve(incident_ids=list(queryset.values_list("pk", flat=True)), actor=actor)
        for incident in queryset:
            self.log_change(request, incident, "Marked resolved")
        self.message_user(request, f"{resolved} incident(s) resolved.", level=messages.SUCCESS)
