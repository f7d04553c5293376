"""Settings: the branding payers see (name, colour, support contact, website, logo), where payments go by
default (the payout token, chain and recipient) and where payers may be sent back to (redirect domains),
the notification emails the merchant gets, and the fee schedule in force. Admins and owners change them;
through the API's serializers and services, audited with the member; errors beside each field.

Changing where money goes needs the member's current second-factor code, typed in the form (a session
alone is not enough: a stolen one must not redirect payouts), and every owner is emailed (by the
`payout_defaults_changed` signal, whatever path changed them)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from checkout.display import payable_tokens
from core.errors import DomainError
from dashboard.auth import SignInRefused, confirmed_device, member_view, prove
from dashboard.forms import Shown, first_message, token_options
from dashboard.roles import ADMIN
from merchant.api import (
    PAYOUT_FIELDS,
    LogoError,
    OrganizationUpdateSerializer,
    logo_from_upload,
    logo_url,
    organization_branding_update,
    organization_update,
    payout_defaults,
)
from orders.fees import fee_schedule
from platform_api.context import RequestContext
from webhooks.events import EVENT_TYPES
from webhooks.services import notification_settings_get, notification_settings_update

FLASH = "dashboard_settings_flash"
BRANDING = ("name", "brand_color", "support_email", "support_url", "website_url")


@require_http_methods(["GET", "POST"])
@member_view(ADMIN, read=ADMIN)
def settings_page(request: HttpRequest) -> HttpResponse:
    organization = request.organization
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
    elif request.method == "POST" and request.POST.get("section") == "payouts":
        status, done = _payouts(request, organization, ctx, errors)
        if done:
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
    payouts = (
        {name: request.POST.get(name, "") for name in ("pay_to", "recipient_address", "redirect_domains")}
        if section == "payouts"
        else {
            "pay_to": f"{organization.default_chain_id}:{organization.default_token_address}"
            if organization.default_chain_id and organization.default_token_address
            else "",
            "recipient_address": organization.default_recipient_address or "",
            "redirect_domains": "\n".join(organization.redirect_domains or []),
        }
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
            "payouts_form": Shown(payouts, errors),
            "tokens": [("", "Not set: each link names its token"), *token_options()[1:]],
            "has_authenticator": confirmed_device(request.member) is not None,
            "fees": fee_schedule(),
            "flash": request.session.pop(FLASH, None),
            "nav": "settings",
        },
        status=status,
    )


PAYOUT_ERRORS = {
    "default_chain_id": "pay_to",
    "default_token_address": "pay_to",
    "default_recipient_address": "recipient_address",
}


def _payouts(
    request: HttpRequest, organization, ctx: RequestContext, errors: dict[str, str]
) -> tuple[int, bool]:
    """The payout defaults and redirect domains from the form, through the API's serializer and service;
    (status, saved). A change of where money goes is refused without the member's current code."""
    pay_to = request.POST.get("pay_to", "").strip()
    chain, _, token = pay_to.partition(":")
    if pay_to and pay_to not in {option["value"] for option in payable_tokens()}:
        errors["pay_to"] = "Choose a token from the list."
        return 400, False
    recipient = request.POST.get("recipient_address", "").strip()
    data = {
        "default_chain_id": int(chain) if pay_to else None,
        "default_token_address": token if pay_to else None,
        "default_recipient_address": recipient or None,
        "redirect_domains": request.POST.get("redirect_domains", "").split(),
    }
    serializer = OrganizationUpdateSerializer(data=data, partial=True)
    if not serializer.is_valid():
        for field, messages in serializer.errors.items():
            errors.setdefault(PAYOUT_ERRORS.get(field, field), first_message(messages))
        return 400, False
    validated = dict(serializer.validated_data)
    current = payout_defaults(organization)
    wanted = {
        name: (value.lower() if isinstance(value, str) else value)
        for name, value in validated.items()
        if name in PAYOUT_FIELDS
    }
    moves_money = current != {**current, **wanted}
    if moves_money:
        if confirmed_device(request.member) is None:
            errors["code"] = "Turn on two-factor sign-in first: changing where money goes needs its code."
            return 400, False
        try:
            if prove(request, request.member, request.POST.get("code", "")) is None:
                errors["code"] = "Enter the current code from your authenticator (or a recovery code)."
                return 400, False
        except SignInRefused as refused:
            errors["code"] = f"Too many wrong codes. Try again in {refused.retry_after} s."
            return 429, False
    try:
        organization_update(ctx=ctx, organization=organization, data=validated)
    except DomainError as exc:
        errors[PAYOUT_ERRORS.get(exc.field or "", "pay_to")] = exc.message
        return 400, False
    request.session[FLASH] = (
        "Payouts saved; every owner was emailed about the change." if moves_money else "Payouts saved."
    )
    return 200, True
