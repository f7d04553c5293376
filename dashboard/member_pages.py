"""The team: members and their roles, pending invitations, inviting someone (by email, with a single-use
link), revoking an invitation, removing a member. Admins and owners change the team; everyone sees it. The
rules (only an owner touches an owner, the last owner stays) are dashboard.members'."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST
from django_otp.plugins.otp_totp.models import TOTPDevice

from dashboard import members as services
from dashboard.auth import member_view
from dashboard.forms import Shown
from dashboard.models import Invitation, Member, Role
from dashboard.once import made_before, new_form_token, remember
from dashboard.roles import ADMIN
from platform_api.context import RequestContext

FLASH = "dashboard_members_flash"


@require_http_methods(["GET", "POST"])
@member_view(ADMIN, modes=False)
def member_list(request: HttpRequest) -> HttpResponse:
    organization = request.member.organization
    errors: dict[str, str] = {}
    values = {"email": "", "role": Role.VIEWER}
    status = 200
    if request.method == "POST":
        if made_before(request):
            return redirect("dashboard:members")
        values = {"email": request.POST.get("email", "").strip(), "role": request.POST.get("role", "")}
        try:
            validate_email(values["email"])
        except ValidationError:
            errors["email"] = "Enter an email address."
        if values["role"] not in Role.values:
            errors["role"] = "Choose a role."
        status = 400
        if not errors:
            try:
                link = services.member_invite(
                    ctx=RequestContext.for_member(request, request.member),
                    inviter=request.member,
                    email=values["email"],
                    role=values["role"],
                )
            except services.MemberError as exc:
                errors[exc.field] = str(exc)
            else:
                remember(request, link.invitation.id)
                request.session[FLASH] = (
                    f"Invitation sent to {link.invitation.email}; the link works for {link.hours} hours."
                )
                return redirect("dashboard:members")
    team = list(
        Member.objects.filter(organization=organization).select_related("user").order_by("created_at")
    )
    with_code = set(
        TOTPDevice.objects.filter(user__member__in=team, confirmed=True).values_list("user_id", flat=True)
    )
    invitations = Invitation.objects.filter(
        organization=organization,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__gt=timezone.now(),
    )
    return render(
        request,
        "dashboard/members.html",
        {
            "member": request.member,
            "team": [{"member": m, "two_factor": m.user_id in with_code} for m in team],
            "invitations": list(invitations),
            "form": Shown(values, errors),
            "role_options": [(role, role) for role in Role.values],
            "form_token": new_form_token(),
            "flash": request.session.pop(FLASH, None),
            "nav": "members",
        },
        status=status,
    )


@require_POST
@member_view(ADMIN, modes=False)
def invitation_revoke(request: HttpRequest, invitation_id: str) -> HttpResponse:
    ctx = RequestContext.for_member(request, request.member)
    if not services.invitation_revoke(
        ctx=ctx, organization=request.member.organization, invitation_id=invitation_id
    ):
        raise Http404("There is no such invitation.")
    return redirect("dashboard:members")


@require_POST
@member_view(ADMIN, modes=False)
def member_remove(request: HttpRequest, member_id: str) -> HttpResponse:
    ctx = RequestContext.for_member(request, request.member)
    try:
        removed = services.member_remove(ctx=ctx, remover=request.member, member_id=member_id)
    except services.MemberError as exc:
        request.session[FLASH] = str(exc)
        return redirect("dashboard:members")
    if removed is None:
        raise Http404("There is no such member.")
    if removed.pk == request.member.pk:
        return redirect("dashboard:sign-in")
    request.session[FLASH] = f"{removed.user.email} is no longer a member."
    return redirect("dashboard:members")
