from django.contrib import admin, messages

from chains.incidents import incidents_resolve
from chains.models import ChainCursor, Deposit, Incident, OutboxTx, Token, WatchedAddress
from chains.registry import chain_get
from core.admin import ReadOnlyModelAdmin


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

    list_display = ("tx_hash", "seq", "chain_id", "block_number", "to_address", "token", "amount", "owner",
                    "status", "handled_at", "handler_error")  # fmt: skip
    list_filter = ("status", "chain_id")
    search_fields = ("=tx_hash", "=to_address", "=from_address", "owner")


@admin.register(WatchedAddress)
class WatchedAddressAdmin(ReadOnlyModelAdmin):
    list_display = ("address", "chain_id", "owner", "watch_until")
    list_filter = ("chain_id",)
    search_fields = ("=address", "owner")


@admin.register(Token)
class TokenAdmin(admin.ModelAdmin):
    list_display = ("symbol", "name", "chain_id", "address", "decimals", "usd_price")
    list_filter = ("chain_id",)
    search_fields = ("symbol", "name", "address")


@admin.register(OutboxTx)
class OutboxTxAdmin(ReadOnlyModelAdmin):
    """Every transaction the service sent or is sending, by business key; the poller moves them on."""

    list_display = ("key", "chain_id", "signer", "status", "nonce", "tx_hash", "broadcasts", "error", "created_at",
                    "finished_at")  # fmt: skip
    list_filter = ("status", "chain_id", "signer")
    search_fields = ("key", "=tx_hash", "=sender", "=to")
    readonly_fields = [f.name for f in OutboxTx._meta.fields]


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
