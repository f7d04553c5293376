"""The merchant's products and customers for staff, read-only (personal data excluded), and the
organization's branding on its admin page."""

from django import forms
from django.contrib import admin
from django.utils.html import format_html

from core.admin import ReadOnlyModelAdmin
from merchant.branding import (
    LogoError,
    logo_from_upload,
    logo_url,
    organization_logo_delete,
    organization_logo_set,
)
from merchant.models import Customer, Product
from platform_api.admin import OrganizationAdmin
from platform_api.context import RequestContext
from platform_api.models import Organization


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


class OrganizationForm(forms.ModelForm):
    """The organization with its branding: the logo is checked and re-encoded as the API does
    (merchant.branding), the URLs are http(s) only."""

    logo_file = forms.FileField(
        required=False,
        label="Upload a logo",
        help_text="PNG, JPEG, WebP or GIF, at most 512 KB; shown to payers as a PNG of at most 512 px a side.",
    )
    remove_logo = forms.BooleanField(required=False, label="Remove the logo")
    logo_url = forms.URLField(required=False, max_length=2048, assume_scheme="https")
    website_url = forms.URLField(required=False, max_length=2048, assume_scheme="https")
    support_url = forms.URLField(required=False, max_length=2048, assume_scheme="https")
    brand_color = forms.RegexField(
        regex=r"^#[0-9a-fA-F]{6}$", required=False, help_text="Accent colour such as #1f4fd1."
    )

    class Meta:
        model = Organization
        exclude = ("logo_digest",)

    def clean(self):
        cleaned = super().clean() or {}
        for name in ("logo_url", "website_url", "support_url"):
            value = cleaned.get(name) or ""
            if value and not value.lower().startswith(("https://", "http://")):
                self.add_error(name, "Enter an http(s) URL.")
        upload = cleaned.get("logo_file")
        if upload is not None:
            try:
                cleaned["logo"] = logo_from_upload(upload.read(512 * 1024 + 1))
            except LogoError as exc:
                self.add_error("logo_file", str(exc))
        return cleaned


class BrandedOrganizationAdmin(OrganizationAdmin):
    """platform_api's organization page, with the branding payers see: colour, support contact, logo."""

    form = OrganizationForm
    readonly_fields = (*OrganizationAdmin.readonly_fields, "logo_preview")  # type: ignore[assignment]

    @admin.display(description="Logo")
    def logo_preview(self, obj):
        url = logo_url(obj) if obj and obj.pk else None
        return format_html('<img src="{}" alt="logo" height="64">', url) if url else "none"

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if form.cleaned_data.get("logo") is not None:
            organization_logo_set(
                ctx=RequestContext.for_staff(request, obj), organization=obj, logo=form.cleaned_data["logo"]
            )
        elif form.cleaned_data.get("remove_logo") and obj.logo_digest:
            organization_logo_delete(ctx=RequestContext.for_staff(request, obj), organization=obj)


admin.site.unregister(Organization)
admin.site.register(Organization, BrandedOrganizationAdmin)
