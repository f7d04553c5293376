"""The solver's inventories for staff: each stock, its limits and where it is refilled from, and its refills."""

from django import forms
from django.contrib import admin

from chains.evm import ZERO_ADDRESS, is_address
from chains.registry import chain_get
from core.admin import short_hex
from orders.models import (
    ExposureLimit,
    Inventory,
    InventoryRefill,
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


class ExposureLimitForm(forms.ModelForm):
    class Meta:
        model = ExposureLimit
        fields = (
            "chain_id",
            "token",
            "max_payment",
            "max_per_payer",
            "payer_window_seconds",
            "max_outstanding",
            "enabled",
        )

    def clean(self):
        data = super().clean()
        chain_id = data.get("chain_id")
        if chain_id is not None and chain_get(chain_id) is None:
            self.add_error("chain_id", f"Chain {chain_id} is not in the registry (manage.py chains add).")
        value = (data.get("token") or "").strip()
        if value and (not is_address(value) or value.lower() == ZERO_ADDRESS):
            self.add_error("token", "Enter an ERC-20 token's address: 0x and 40 hex characters.")
        elif value:
            data["token"] = value.lower()
        for field in ("max_payment", "max_per_payer", "max_outstanding"):
            amount = str(data.get(field, "")).strip()
            if not amount.isdigit():
                self.add_error(field, "Enter a whole number of the token's smallest unit, 0 or more.")
                data.pop(field, None)
            else:
                data[field] = int(amount)
        return data


@admin.register(ExposureLimit)
class ExposureLimitAdmin(admin.ModelAdmin):
    """What the solver may deliver against on first sight, per chain and token paid (orders/fronting.py)."""

    form = ExposureLimitForm
    list_display = ("chain_id", "token", "max_payment", "max_per_payer", "max_outstanding", "enabled")
    list_filter = ("chain_id", "enabled")
