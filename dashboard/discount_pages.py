"""Discount codes in the dashboard: create, edit, deactivate, delete. Through the API's serializers and
services (checkout.discount_api), audited with the member as the actor.

A fixed discount and a minimum order are amounts of a token: the form takes them in the token of the link
the code is for, or of the organization's default token for a code good on every link, and shows which.
"""

from __future__ import annotations

from datetime import UTC

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods, require_POST

from chains.models import Token
from checkout import services
from checkout.display import display_token, format_units
from checkout.models import DiscountCode, PaymentLink
from checkout.serializers import DiscountUpdateSerializer, DiscountWriteSerializer
from dashboard.auth import member_view, owned
from dashboard.forms import ApiForm, form_page, submitted, to, whole_number
from dashboard.roles import WRITE
from platform_api.context import RequestContext

FLASH = "dashboard_discount_flash"
TYPES = [(DiscountCode.Type.PERCENTAGE, "A percentage off"), (DiscountCode.Type.FIXED, "An amount off")]
LINK_CHOICES = 200  # the newest links offered in the form's list


def code_token(organization, link: PaymentLink | None) -> Token | None:
    """The token a code's amounts are in: its link's, else the organization's default."""
    if link is not None:
        return display_token(link.chain_id, link.token_address)
    if organization.default_chain_id and organization.default_token_address:
        return display_token(organization.default_chain_id, organization.default_token_address)
    return None


def discount_text(code: DiscountCode, token: Token | None) -> str:
    if code.type == DiscountCode.Type.PERCENTAGE:
        return f"{code.value} %"
    return (
        f"{format_units(int(code.value), token.decimals)} {token.symbol}" if token else f"{code.value} units"
    )


class DiscountForm(ApiForm):
    FIELDS = ("code", "type", "value", "payment_link_id", "max_uses", "min_order_amount", "expires_at")

    @classmethod
    def of(cls, code: DiscountCode, token: Token | None) -> DiscountForm:
        def amount(units) -> str:
            if units is None:
                return ""
            return format_units(int(units), token.decimals) if token else str(units)

        value = code.value if code.type == DiscountCode.Type.PERCENTAGE else amount(code.value)
        return cls(
            initial={name: getattr(code, name) for name in ("code", "type", "payment_link_id", "max_uses")}
            | {
                "value": value,
                "min_order_amount": amount(code.min_order_amount),
                "expires_at": code.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")
                if code.expires_at
                else "",
            }
        )

    def body(self, organization, *, editing: bool) -> dict | None:
        link = None
        if self.text("payment_link_id"):
            link = PaymentLink.objects.filter(
                organization=organization, pk=self.text("payment_link_id"), deleted_at__isnull=True
            ).first()
            if link is None:
                self.refuse("payment_link_id", "Choose one of your payment links.")
        token = code_token(organization, link)
        if self.text("type") == DiscountCode.Type.FIXED:
            if token is None and link is None and not self.errors:
                self.refuse("value", "Choose the link it is for, or set a default token in settings first.")
            value = self.units("value", token, required=True)
        else:
            value = whole_number(self.text("value"))
            if value is None:
                self.refuse("value", "Enter the percentage off, 1 to 100.")
        minimum = self.units("min_order_amount", token, zero=True) if self.text("min_order_amount") else None
        body = {
            "code": self.text("code"),
            "type": self.text("type"),
            "value": value if value is not None else "",
            "payment_link_id": link.id if link else None,
            "max_uses": whole_number(self.text("max_uses")),
            "min_order_amount": None if minimum is None else str(minimum),
            "expires_at": self._expiry(),
        }
        serializer = DiscountUpdateSerializer if editing else DiscountWriteSerializer
        return self.checked(serializer, body, partial=editing)

    def _expiry(self) -> int | None:
        """The typed expiry (UTC) as the API's epoch milliseconds; an unreadable one is refused here."""
        typed = self.text("expires_at")
        if not typed:
            return None
        moment = parse_datetime(typed) if len(typed) < 40 else None
        if moment is None:
            self.refuse("expires_at", "Enter a date and time such as 2026-12-31T23:59, or leave it empty.")
            return None
        if timezone.is_naive(moment):
            moment = moment.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)


def _owned(request: HttpRequest, code_id: str) -> DiscountCode:
    live = DiscountCode.objects.select_related("payment_link").filter(deleted_at__isnull=True)
    return owned(live, request, code_id, "discount code")


def _page(request: HttpRequest, form: DiscountForm, code: DiscountCode | None) -> HttpResponse:
    organization = request.organization
    links = PaymentLink.objects.filter(organization=organization, deleted_at__isnull=True).order_by(
        "-created_at"
    )
    default = code_token(organization, None)
    return form_page(
        request,
        "dashboard/discount_form.html",
        form,
        nav="discounts",
        flash=FLASH,
        code=code,
        types=TYPES,
        links=[("", "Every link")]
        + [(link.id, link.name) for link in links.only("id", "name")[:LINK_CHOICES]],
        default_token=default.symbol if default else None,
    )


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def discount_create(request: HttpRequest) -> HttpResponse:
    organization = request.organization
    if request.method == "GET":
        return _page(request, DiscountForm(initial={"type": DiscountCode.Type.PERCENTAGE}), None)
    form = DiscountForm(request.POST)
    return submitted(
        request,
        form,
        body=lambda: form.body(organization, editing=False),
        write=lambda ctx, data: (
            services.discount_code_create(ctx=ctx, organization=organization, data=data).id
        ),
        done=to("dashboard:discount"),
        once=True,
    ) or _page(request, form, None)


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def discount_detail(request: HttpRequest, code_id: str) -> HttpResponse:
    organization = request.organization
    code = _owned(request, code_id)
    if request.method == "GET":
        return _page(request, DiscountForm.of(code, code_token(organization, code.payment_link)), code)
    form = DiscountForm(request.POST)
    return submitted(
        request,
        form,
        body=lambda: form.body(organization, editing=True),
        write=lambda ctx, data: services.discount_code_update(ctx=ctx, code=code, data=data).id,
        done=to("dashboard:discount", flash=(FLASH, "Discount code saved.")),
    ) or _page(request, form, code)


@require_POST
@member_view(WRITE)
def discount_active(request: HttpRequest, code_id: str) -> HttpResponse:
    code = _owned(request, code_id)
    wanted = request.POST.get("active") == "true"
    if code.is_active != wanted:
        ctx = RequestContext.for_member(request, request.member)
        services.discount_code_update(ctx=ctx, code=code, data={"is_active": wanted})
    request.session[FLASH] = "The code works again." if wanted else "The code no longer works."
    return redirect("dashboard:discount", code.id)


@require_POST
@member_view(WRITE)
def discount_delete(request: HttpRequest, code_id: str) -> HttpResponse:
    code = _owned(request, code_id)
    services.discount_code_delete(ctx=RequestContext.for_member(request, request.member), code=code)
    return redirect("dashboard:discounts")
