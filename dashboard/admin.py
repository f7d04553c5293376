"""Members in the admin: who belongs to which organization with which role, and the staff's recovery path for
a member who lost their authenticator and their recovery codes."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Exists, OuterRef
from django_otp.plugins.otp_totp.models import TOTPDevice

from dashboard.auth import second_factor_reset
from dashboard.models import Member
from platform_api.context import RequestContext


@admin.register(Member)
class MemberAdmin(admin.ModelAdmin):
    list_display = ("id", "email", "organization", "role", "two_factor", "created_at")
    list_filter = ("role",)
    search_fields = ("id", "user__username")
    list_select_related = ("user", "organization")
    readonly_fields = ("id", "user", "organization", "session_generation", "created_at")
    fields = ("id", "user", "organization", "role", "session_generation", "created_at")
    actions = ["reset_second_factor"]

    @admin.display(description="email", ordering="user__username")
    def email(self, member: Member) -> str:
        return member.user.username

    def get_queryset(self, request):
        devices = TOTPDevice.objects.filter(user_id=OuterRef("user_id"), confirmed=True)
        return super().get_queryset(request).annotate(has_authenticator=Exists(devices))

    @admin.display(description="two-factor", boolean=True, ordering="has_authenticator")
    def two_factor(self, member: Member) -> bool:
        return member.has_authenticator  # type: ignore[attr-defined]

    def has_add_permission(self, request) -> bool:
        return False  # members join by invitation (the Team page) or `manage.py create_member`

    @admin.action(description="Reset two-factor sign-in (after checking who asks: a lost phone and codes)")
    def reset_second_factor(self, request, queryset):
        for member in queryset.select_related("user", "organization"):
            second_factor_reset(member=member, ctx=RequestContext.for_staff(request, member.organization))
        self.message_user(
            request,
            f"Reset the second factor of {queryset.count()} member(s): they are signed out everywhere; an owner "
            "sets a new authenticator up at the next sign-in.",
            messages.SUCCESS,
        )
