from django.contrib import admin

from chains.models import ChainCursor, Deposit, OutboxTx, Token, WatchedAddress
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
    list_display = ("tx_hash", "chain_id", "block_number", "to_address", "token", "amount", "owner", "handled_at",
                    "handler_error")  # fmt: skip
    list_filter = ("chain_id",)
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
