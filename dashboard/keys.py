"""API keys in the dashboard: the organization's keys (prefix, permissions, last use, expiry), a new key shown
once, revoked at once. Developers and above; through platform_api.services, audited with the member, whose
role bounds what the key may do (dashboard.roles.API_PERMISSION): a developer makes `read` keys, and revokes
only those."""

from __future__ import annotations

from datetime import datetime, time

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_date
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import Forbidden
from dashboard.auth import member_view
from dashboard.forms import Shown
from dashboard.once import made_before, new_form_token, remember
from dashboard.roles import DEVELOP
from platform_api.context import RequestContext
from platform_api.models import PERMISSION_RANK, ApiKey, Permission
from platform_api.services import api_key_create, api_key_revoke

NEW_KEY = "dashboard_new_key"


@require_http_methods(["GET", "POST"])
@member_view(DEVELOP, read=DEVELOP)
def key_list(request: HttpRequest) -> HttpResponse:
    """The keys are the developers' page, to read too."""
    organization = request.organization
    ctx = RequestContext.for_member(request, request.member)
    grantable = [p for p in Permission.values if ctx.allows(p)]
    errors: dict[str, str] = {}
    values = {"name": "", "permissions": ["read"], "expires": ""}
    status = 200
    if request.method == "POST":
        if made_before(request):  # sent twice: the first made the key, which is shown once only
            return redirect("dashboard:keys")
        values = {
            "name": request.POST.get("name", "").strip(),
            "permissions": [p for p in request.POST.getlist("permissions") if p in Permission.values],
            "expires": request.POST.get("expires", "").strip(),
        }
        if not values["name"] or len(values["name"]) > 100:
            errors["name"] = "Name the key (at most 100 characters), such as “shop backend”."
        if not values["permissions"]:
            errors["permissions"] = "Choose at least one permission."
        elif not set(values["permissions"]) <= set(grantable):
            errors["permissions"] = (
                f"Your role ({request.member.role}) makes keys with {', '.join(grantable)} at most; "
                "ask an owner or admin for more."
            )
        expires_at = None
        if values["expires"]:
            day = parse_date(values["expires"]) if len(values["expires"]) == 10 else None
            if day is None or day <= timezone.now().date():
                errors["expires"] = "Enter a future date such as 2027-01-31, or leave it empty."
            else:
                expires_at = timezone.make_aware(datetime.combine(day, time.max.replace(microsecond=0)))
        status = 400
        if not errors:
            try:
                key, raw = api_key_create(
                    organization=organization,
                    name=values["name"],
                    permissions=values["permissions"],
                    expires_at=expires_at,
                    ctx=ctx,
                )
            except Forbidden as refused:  # the form's check above says the same, with the role's words
                errors["permissions"] = refused.message
                return _page(request, values=values, errors=errors, grantable=grantable)
            remember(request, key.id)
            request.session[NEW_KEY] = {"id": key.id, "raw": raw}
            return redirect("dashboard:keys")
    return _page(request, values=values, errors=errors, grantable=grantable, status=status)


def _page(request: HttpRequest, *, values, errors, grantable, status: int = 400) -> HttpResponse:
    rank = PERMISSION_RANK[Permission(grantable[-1])] if grantable else 0
    keys = [
        (key, PERMISSION_RANK.get(Permission(key.highest_permission), 0) <= rank)
        for key in ApiKey.objects.filter(organization=request.organization).order_by("-created_at")
    ]
    return render(
        request,
        "dashboard/keys.html",
        {
            "member": request.member,
            "keys": keys,
            "new_key": request.session.pop(NEW_KEY, None),
            "errors": errors,
            "values": values,
            "form": Shown(values, errors),
            "permissions": grantable,
            "form_token": new_form_token(),
            "nav": "keys",
        },
        status=status,
    )


@require_POST
@member_view(DEVELOP)
def key_revoke(request: HttpRequest, key_id: str) -> HttpResponse:
    key = ApiKey.objects.filter(organization=request.organization, pk=key_id).first()
    if key is None:
        raise Http404("There is no such key.")
    try:
        api_key_revoke(api_key=key, ctx=RequestContext.for_member(request, request.member))
    except Forbidden as refused:
        return render(
            request,
            "dashboard/denied.html",
            {"member": request.member, "message": refused.message},
            status=403,
        )
    return redirect("dashboard:keys")
