"""The merchant's products and customers for staff, read-only (personal data excluded)."""

from django.contrib import admin

from core.admin import ReadOnlyModelAdmin
from merchant.models import Customer, Product


@admin.register(Customer)
class CustomerAdmin(ReadOnlyModelAdmin):
    list_display = (
        "wallet_address",
        "organization",
        "total_paid",
        "transaction_count",
        "last_payment_at",
        "erased_at",
    )
    list_filter = ("organization",)
    search_fields = ("id", "wallet_address")
    list_select_related = ("organization",)
    exclude = ("name", "email", "name_digest", "email_digest")


@admin.register(Product)
class ProductAdmin(ReadOnlyModelAdmin):
    list_display = ("name", "organization", "product_type", "amount", "chain_id", "is_active", "created_at")
    list_filter = ("product_type", "is_active", "chain_id", "organization")
    search_fields = ("id", "name", "organization__slug")
    list_select_related = ("organization",)
