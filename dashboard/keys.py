"""API keys in the dashboard: the organization's keys (prefix, permissions, last use, expiry), a new key shown
once, revoked at once. Developers and above; through platform_api.services, audited with the member."""

from __future__ import annotations

from datetime import datetime, time

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_date
from django.views.decorators.http import require_http_methods, require_POST

from dashboard.auth import member_view
from dashboard.forms import Shown
from dashboard.once import made_before, new_form_token, remember
from dashboard.roles import DEVELOP
from platform_api.context import RequestContext
from platform_api.models import ApiKey, Permission
from platform_api.services import api_key_create, api_key_revoke

NEW_KEY = "dashboard_new_key"


@require_http_methods(["GET", "POST"])
@member_view(DEVELOP, read=DEVELOP)
def key_list(request: HttpRequest) -> HttpResponse:
    """The keys are the developers' page, to read too."""
    organization = request.member.organization
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
        expires_at = None
        if values["expires"]:
            day = parse_date(values["expires"]) if len(values["expires"]) == 10 else None
            if day is None or day <= timezone.now().date():
                errors["expires"] = "Enter a future date such as 2027-01-31, or leave it empty."
            else:
                expires_at = timezone.make_aware(datetime.combine(day, time.max.replace(microsecond=0)))
        status = 400
        if not errors:
            key, raw = api_key_create(
                organization=organization,
                name=values["name"],
                permissions=values["permissions"],
                expires_at=expires_at,
                ctx=RequestContext.for_member(request, request.member),
            )
            remember(request, key.id)
            request.session[NEW_KEY] = {"id": key.id, "raw": raw}
            return redirect("dashboard:keys")
    keys = list(ApiKey.objects.filter(organization=organization).order_by("-created_at"))
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
            "permissions": Permission.values,
            "form_token": new_form_token(),
            "nav": "keys",
        },
        status=status,
    )


@require_POST
@member_view(DEVELOP)
def key_revoke(request: HttpRequest, key_id: str) -> HttpResponse:
    key = ApiKey.objects.filter(organization=request.member.organization, pk=key_id).first()
    if key is None:
        raise Http404("There is no such key.")
    api_key_revoke(api_key=key, ctx=RequestContext.for_member(request, request.member))
    return redirect("dashboard:keys")
