"""The team: members and their roles, pending invitations, inviting someone (by email, through the
notification outbox, with a single-use link), revoking an invitation, removing a member. Admins and owners
change the team; everyone sees it. An owner is removed only by another owner, and the last owner stays."""

from __future__ import annotations

import secrets

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST
from django_otp.plugins.otp_totp.models import TOTPDevice

from dashboard import members as services
from dashboard.auth import member_view, sign_out_everywhere
from dashboard.links import FORM_TOKENS
from dashboard.models import Invitation, Member, Role
from dashboard.roles import ADMIN
from platform_api.context import RequestContext
from platform_api.signals import record_write
from webhooks.notifications import queue

FLASH = "dashboard_members_flash"


@require_http_methods(["GET", "POST"])
@member_view(ADMIN)
def member_list(request: HttpRequest) -> HttpResponse:
    organization = request.member.organization
    errors: dict[str, str] = {}
    values = {"email": "", "role": Role.VIEWER}
    status = 200
    if request.method == "POST":
        token = request.POST.get("form_token", "")
        made = request.session.get(FORM_TOKENS, {})
        if token and token in made:
            return redirect("dashboard:members")
        values = {"email": request.POST.get("email", "").strip(), "role": request.POST.get("role", "")}
        try:
            validate_email(values["email"])
        except ValidationError:
            errors["email"] = "Enter an email address."
        if values["role"] not in Role.values:
            errors["role"] = "Choose a role."
        elif values["role"] == Role.OWNER and request.member.role != Role.OWNER:
            errors["role"] = "Only an owner may invite an owner."
        status = 400
        if not errors:
            try:
                with transaction.atomic():
                    link = services.invitation_create(
                        organization=organization,
                        email=values["email"],
                        role=values["role"],
                        invited_by=request.member,
                    )
                    body = render_to_string(
                        "dashboard/email/invitation.txt",
                        {"organization": organization, "link": link, "inviter": request.member.user.email},
                    )
                    record_write(
                        ctx=RequestContext.for_member(request, request.member),
                        event_type="invitation.created",
                        resource_type="invitation",
                        resource_id=link.invitation.id,
                        status_code=201,
                    )
                    queue(
                        organization=organization,
                        event=None,
                        event_type="member.invited",
                        to=link.invitation.email,
                        subject=f"Join {organization.name} on the payments dashboard"[:200],
                        body=body,
                    )
            except services.MemberError as exc:
                errors["email"] = str(exc)
            else:
                made[token] = link.invitation.id
                request.session[FORM_TOKENS] = dict(list(made.items())[-50:])
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
            "errors": errors,
            "values": values,
            "roles": Role.values,
            "form_token": secrets.token_urlsafe(16),
            "flash": request.session.pop(FLASH, None),
            "nav": "members",
        },
        status=status,
    )


@require_POST
@member_view(ADMIN)
def invitation_revoke(request: HttpRequest, invitation_id: str) -> HttpResponse:
    found = Invitation.objects.filter(organization=request.member.organization, pk=invitation_id)
    if not found.exists():
        raise Http404("There is no such invitation.")
    with transaction.atomic():
        if found.filter(accepted_at__isnull=True, revoked_at__isnull=True).update(revoked_at=timezone.now()):
            record_write(
                ctx=RequestContext.for_member(request, request.member),
                event_type="invitation.revoked",
                resource_type="invitation",
                resource_id=invitation_id,
                status_code=200,
            )
    return redirect("dashboard:members")


@require_POST
@member_view(ADMIN)
def member_remove(request: HttpRequest, member_id: str) -> HttpResponse:
    organization = request.member.organization
    with transaction.atomic():
        target = Member.objects.select_for_update().filter(organization=organization, pk=member_id).first()
        if target is None:
            raise Http404("There is no such member.")
        owners = Member.objects.select_for_update().filter(organization=organization, role=Role.OWNER)
        if target.role == Role.OWNER and (request.member.role != Role.OWNER or owners.count() <= 1):
            request.session[FLASH] = "An owner is removed only by another owner, and the last owner stays."
            return redirect("dashboard:members")
        sign_out_everywhere(target)
        user = target.user
        target.delete()
        user.is_active = False
        user.save(update_fields=["is_active"])
        record_write(
            ctx=RequestContext.for_member(request, request.member),
            event_type="member.deleted",
            resource_type="member",
            resource_id=member_id,
            status_code=200,
        )
    if target.pk == request.member.pk:
        return redirect("dashboard:sign-in")
    request.session[FLASH] = f"{user.email} is no longer a member."
    return redirect("dashboard:members")
