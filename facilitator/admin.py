from django.contrib import admin

from core.admin import ReadOnlyModelAdmin
from facilitator.models import Settlement


@admin.register(Settlement)
class SettlementAdmin(ReadOnlyModelAdmin):
    """The authorizations the x402 facilitator settled or was asked to: who paid whom, and the transaction."""

    list_display = ("created_at", "organization", "chain_id", "payer", "pay_to", "value", "status", "tx_hash")
    list_filter = ("status", "chain_id", "submitted_by_us")
    search_fields = ("=payer", "=pay_to", "=tx_hash", "=nonce")
    readonly_fields = [f.name for f in Settlement._meta.fields]
