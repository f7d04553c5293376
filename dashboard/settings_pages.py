"""Settings: the branding payers see (name, colour, support contact, website, logo) and the notification
emails the merchant gets. Admins and owners change them; through the API's serializers and services,
audited with the member; errors beside each field."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from core.errors import DomainError
from dashboard.auth import member_view
from dashboard.forms import Shown, first_message
from dashboard.roles import ADMIN
from merchant.branding import LogoError, logo_from_upload, logo_url
from merchant.organization import OrganizationUpdateSerializer, organization_branding_update
from platform_api.context import RequestContext
from webhooks.events import EVENT_TYPES
from webhooks.services import notification_settings_get, notification_settings_update

FLASH = "dashboard_settings_flash"
BRANDING = ("name", "brand_color", "support_email", "support_url", "website_url")


@require_http_methods(["GET", "POST"])
@member_view(ADMIN, read=ADMIN)
def settings_page(request: HttpRequest) -> HttpResponse:
    organization = request.member.organization
    errors: dict[str, str] = {}
    status = 200
    ctx = RequestContext.for_member(request, request.member)
    notifications = notification_settings_get(organization)
    if request.method == "POST" and request.POST.get("section") == "branding":
        data = {name: request.POST.get(name, "").strip() for name in BRANDING}
        serializer = OrganizationUpdateSerializer(data=data, partial=True)
        logo = None
        upload = request.FILES.get("logo")
        if upload is not None:
            try:
                logo = logo_from_upload(upload.read(512 * 1024 + 1))
            except LogoError as exc:
                errors["logo"] = str(exc)
        if not serializer.is_valid():
            errors |= {field: first_message(messages) for field, messages in serializer.errors.items()}
        status = 400
        if not errors:
            try:
                organization = organization_branding_update(
                    ctx=ctx, organization=organization, data=dict(serializer.validated_data), logo=logo
                )
            except DomainError as exc:
                errors[exc.field or "name"] = exc.message
            else:
                request.session[FLASH] = "Branding saved: payers see it on their next page."
                return redirect("dashboard:settings")
    elif request.method == "POST" and request.POST.get("section") == "notifications":
        data = {
            "email_enabled": request.POST.get("email_enabled") == "on",
            "email_address": request.POST.get("email_address", "").strip(),
            "enabled_events": [e for e in request.POST.getlist("enabled_events") if e in EVENT_TYPES],
        }
        status = 400
        try:
            notification_settings_update(ctx=ctx, organization=organization, data=data)
        except DomainError as exc:
            errors[exc.field or "email_address"] = exc.message
        else:
            request.session[FLASH] = "Notification settings saved."
            return redirect("dashboard:settings")
    organization.refresh_from_db()
    section = request.POST.get("section")
    values = {
        name: request.POST.get(name, "") if section == "branding" else getattr(organization, name)
        for name in BRANDING
    }
    typed_email = (
        request.POST.get("email_address", "") if section == "notifications" else notifications.email_address
    )
    return render(
        request,
        "dashboard/settings.html",
        {
            "member": request.member,
            "organization": organization,
            "logo": logo_url(organization),
            "notifications": notifications,
            "event_types": EVENT_TYPES,
            "errors": errors,
            "form": Shown(values, errors),
            "notifications_form": Shown({"email_address": typed_email}, errors),
            "flash": request.session.pop(FLASH, None),
            "nav": "settings",
        },
        status=status,
    )
