from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from platform_api.context import RequestContext
from platform_api.models import ApiKey, Organization, Permission
from platform_api.services import api_key_create, api_key_revoke


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    fields = ("name", "key_prefix", "permissions", "is_active", "last_used_at", "expires_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    """The organization; merchant.admin adds its branding (the logo lives in the merchant app)."""

    list_display = ("slug", "name", "livemode", "contact_email", "created_at")
    list_filter = ("livemode",)
    search_fields = ("slug", "name", "contact_email")
    readonly_fields = ("id", "livemode", "sandbox_of", "created_at", "updated_at")
    inlines = [ApiKeyInline]

    def save_model(self, request, obj, form, change):
        obj.updated_at = timezone.now()
        super().save_model(request, obj, form, change)


class ApiKeyAddForm(forms.ModelForm):
    permissions = forms.MultipleChoiceField(choices=Permission.choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = ApiKey
        fields = ("organization", "name", "permissions", "expires_at")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "organization",
        "key_prefix",
        "permission_list",
        "is_active",
        "last_used_at",
        "expires_at",
    )
    list_filter = ("is_active", "organization")
    search_fields = ("name", "key_prefix", "id", "organization__slug")
    list_select_related = ("organization",)
    actions = ["revoke_selected"]

    @admin.display(description="permissions")
    def permission_list(self, obj):
        return ", ".join(obj.permissions)

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("organization", "name", "permissions", "expires_at")
        return (
            "id",
            "organization",
            "name",
            "key_prefix",
            "permissions",
            "is_active",
            "revoked_at",
            "last_used_at",
            "expires_at",
            "created_at",
        )

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return (
            "id",
            "organization",
            "key_prefix",
            "permissions",
            "is_active",
            "revoked_at",
            "last_used_at",
            "expires_at",
            "created_at",
        )

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["name"])
            return
        api_key, raw_key = api_key_create(
            organization=form.cleaned_data["organization"],
            name=form.cleaned_data["name"],
            permissions=form.cleaned_data["permissions"],
            expires_at=form.cleaned_data.get("expires_at"),
            ctx=RequestContext.for_staff(request, form.cleaned_data["organization"]),
        )
        # The admin goes on to log and link `obj`; make it the row the service created.
        for field in ApiKey._meta.concrete_fields:
            setattr(obj, field.attname, getattr(api_key, field.attname))
        obj._state.adding = False
        messages.warning(
            request,
            f"Copy the new key now; it is shown only once: {raw_key}",
        )

    def has_delete_permission(self, request, obj=None):
        return False  # keys are revoked, never deleted, so the audit trail keeps its subject

    @admin.action(description="Revoke selected API keys")
    def revoke_selected(self, request, queryset):
        revoked = 0
        for api_key in queryset.select_related("organization").filter(is_active=True):
            api_key_revoke(api_key=api_key, ctx=RequestContext.for_staff(request, api_key.organization))
            revoked += 1
        self.message_user(request, f"Revoked {revoked} API key(s).", messages.SUCCESS)


# --- merchant resources: read-mostly views for staff (the merchant changes them through the API) ---------
