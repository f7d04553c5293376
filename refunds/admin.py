from django.contrib import admin

from refunds.models import Refund, RefundBalance, RefundTopUp, RefundWithdrawal


class ReadOnly(admin.ModelAdmin):
    """Refunds move money: staff read them here; they change through the API, the dashboard and the workers."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Refund)
class RefundAdmin(ReadOnly):
    list_display = (
        "id",
        "status",
        "organization",
        "payment_id",
        "amount",
        "chain_id",
        "funding_method",
        "destination_address",
        "created_at",
    )
    list_filter = ("status", "funding_method", "chain_id")
    list_select_related = ("organization",)
    search_fields = ("=id", "=payment_id", "=funding_address", "=destination_address")
    readonly_fields = [f.name for f in Refund._meta.fields]


@admin.register(RefundBalance)
class RefundBalanceAdmin(ReadOnly):
    list_display = ("organization", "chain_id", "token_address", "amount", "updated_at")
    list_select_related = ("organization",)
    readonly_fields = [f.name for f in RefundBalance._meta.fields]


@admin.register(RefundTopUp)
class RefundTopUpAdmin(ReadOnly):
    list_display = (
        "id",
        "organization",
        "chain_id",
        "token_address",
        "deposit_address",
        "credited",
        "expires_at",
    )
    list_select_related = ("organization",)
    search_fields = ("=id", "=deposit_address")
    readonly_fields = [f.name for f in RefundTopUp._meta.fields]


@admin.register(RefundWithdrawal)
class RefundWithdrawalAdmin(ReadOnly):
    list_display = (
        "id",
        "status",
        "organization",
        "chain_id",
        "amount",
        "address",
        "requested_by",
        "created_at",
    )
    list_filter = ("status",)
    list_select_related = ("organization",)
    search_fields = ("=id", "=address", "=tx_hash")
    readonly_fields = [f.name for f in RefundWithdrawal._meta.fields]
