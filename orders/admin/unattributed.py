"""Deposits whose refund has nowhere to go (a contract's internal payment, no refundAddress): staff enter an
address and the refund is sent."""

from django import forms
from django.contrib import admin
from django.db.models import Q

from chains.collection import unattributed_subject
from chains.evm import is_address, to_checksum_address
from chains.incidents import incidents_resolve
from chains.keys import OwnerKind
from chains.models import Incident
from orders.admin.cells import in_units
from orders.models import (
    DepositTx,
    UnattributedDeposit,
)
from orders.tasks import settle_order_task


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
                    kind=Incident.Kind.UNATTRIBUTED, subject=unattributed_subject(OwnerKind.ORDER, obj.pk)
                ).values_list("pk", flat=True)
            ),
            actor=actor,
        )
        settle_order_task.delay(str(obj.order_id), actor=actor)
        self.message_user(
            request, f"Deposit {obj.pk} is refunded to {obj.refund_to} if its order must refund it."
        )
