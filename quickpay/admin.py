from django.contrib import admin

from quickpay.models import QuickPayment


@admin.register(QuickPayment)
class QuickPaymentAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "status",
        "organization",
        "chain_id",
        "token_address",
        "amount",
        "amount_received",
        "deposit_address",
        "expires_at",
        "paid_at",
    )
    list_filter = ("status", "chain_id")
    list_select_related = ("organization",)
    search_fields = ("=id", "=deposit_address", "=recipient_address", "=tx_hash")
    readonly_fields = [f.name for f in QuickPayment._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
