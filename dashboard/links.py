"""Payment links in the dashboard: list, create, a link's page (share link, QR code, stats, sessions),
deactivate and activate. Writes go through checkout.links, as the API's do, validated by the API's own
serializer, audited with the member as the actor.

A form carries a one-time token: submitting it twice (a double click, a reload) makes one link, and the
second submit lands on the link the first made.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from checkout import links as services
from checkout import selectors
from checkout.display import display_token, format_units, payable_tokens, qr_svg
from checkout.models import PaymentLink
from checkout.serializers import PaymentLinkWriteSerializer
from core.errors import DomainError
from dashboard.auth import member_view
from dashboard.once import made_before, new_form_token, remember
from dashboard.roles import WRITE
from platform_api.context import RequestContext
from platform_api.errors import PlatformError


def _price(link: PaymentLink) -> str:
    token = display_token(link.chain_id, link.token_address)
    if link.amount is None:
        return "Payer chooses"
    if token is None:
        return f"{link.amount} units"
    return f"{format_units(int(link.amount), token.decimals)} {token.symbol}"


def _link_url(link: PaymentLink) -> str:
    return f"{settings.PUBLIC_BASE_URL.rstrip('/')}/pay/{link.short_code}"


def _owned(request: HttpRequest, link_id: str) -> PaymentLink:
    try:
        return selectors.payment_link_get(organization=request.member.organization, link_id=link_id)
    except (PlatformError, DomainError):
        raise Http404("There is no such payment link.") from None


@require_http_methods(["GET"])
@member_view()
def link_list(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:100]
    found = selectors.payment_link_list(organization=request.member.organization, search=query or None)
    page = Paginator(found.order_by("-created_at", "-id"), 25).get_page(request.GET.get("page"))
    rows = [
        {
            "link": link,
            "price": _price(link),
            "url": _link_url(link),
            "active": link.unavailable_reason() is None,
        }
        for link in page.object_list
    ]
    return render(
        request,
        "dashboard/links.html",
        {"member": request.member, "rows": rows, "page": page, "q": query, "nav": "links"},
    )


class _Form:
    """The create form's fields as the page shows them, and their errors by field."""

    FIELDS = ("name", "description", "amount", "pay_to", "recipient_address")

    def __init__(self, post=None, organization=None):
        self.values = {name: (post.get(name, "") if post else "") for name in self.FIELDS}
        if not post and organization is not None:
            self.values["recipient_address"] = organization.default_recipient_address or ""
            if organization.default_chain_id and organization.default_token_address:
                self.values["pay_to"] = (
                    f"{organization.default_chain_id}:{organization.default_token_address}"
                )
        self.errors: dict[str, str] = {}

    def data(self) -> dict | None:
        """What the API's serializer gets, or None with `errors` filled."""
        chain, _, token = self.values["pay_to"].partition(":")
        known = {option["value"]: option for option in payable_tokens()}
        if self.values["pay_to"] not in known:
            self.errors["pay_to"] = "Choose the token you are paid in."
        amount = None
        if self.values["amount"].strip():
            found = display_token(int(chain), token) if chain.isdigit() else None
            try:
                number = Decimal(self.values["amount"].strip().replace(",", "."))
                if not number.is_finite() or number <= 0 or found is None:
                    raise InvalidOperation
                amount = int(number.scaleb(found.decimals))
                if Decimal(amount) != number.scaleb(found.decimals):
                    self.errors["amount"] = f"At most {found.decimals} decimals for {found.symbol}."
            except InvalidOperation:
                self.errors.setdefault("amount", "Enter an amount greater than zero, such as 25 or 9.99.")
        body = {
            "name": self.values["name"],
            "description": self.values["description"],
            "recipient_address": self.values["recipient_address"].strip() or None,
        }
        if self.values["pay_to"] in known:
            body |= {"chain_id": int(chain), "token_address": token}
        if amount is not None:
            body["amount"] = str(amount)
        body = {key: value for key, value in body.items() if value is not None}
        serializer = PaymentLinkWriteSerializer(data=body)
        if not serializer.is_valid():
            for field, messages in serializer.errors.items():
                target = {"chain_id": "pay_to", "token_address": "pay_to"}.get(field, field)
                text = messages[0] if isinstance(messages, list) else str(messages)
                self.errors.setdefault(target if target in self.FIELDS else "form", str(text))
        return None if self.errors else dict(serializer.validated_data)


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def link_create(request: HttpRequest) -> HttpResponse:
    organization = request.member.organization
    form = _Form(request.POST if request.method == "POST" else None, organization)
    status = 200
    if request.method == "POST":
        if made := made_before(request):  # the same form sent again: what its first submit made
            return redirect("dashboard:link", link_id=made)
        data = form.data()
        status = 400
        if data is not None:
            try:
                link = services.payment_link_create(
                    ctx=RequestContext.for_member(request, request.member),
                    organization=organization,
                    data=data,
                )
            except (DomainError, PlatformError) as exc:
                field = getattr(exc, "field", None) or getattr(exc, "param", None)
                target = {"chain_id": "pay_to", "token_address": "pay_to"}.get(field or "", field or "form")
                form.errors[target if target in _Form.FIELDS else "form"] = getattr(exc, "message", str(exc))
            else:
                remember(request, link.id)
                return redirect("dashboard:link", link_id=link.id)
    return render(
        request,
        "dashboard/link_form.html",
        {
            "member": request.member,
            "form": form,
            "tokens": payable_tokens(),
            "form_token": new_form_token(),
            "nav": "links",
        },
        status=status,
    )


@require_http_methods(["GET"])
@member_view()
def link_detail(request: HttpRequest, link_id: str) -> HttpResponse:
    link = _owned(request, link_id)
    url = _link_url(link)
    return render(
        request,
        "dashboard/link.html",
        {
            "member": request.member,
            "link": link,
            "price": _price(link),
            "url": url,
            "qr": qr_svg(url),
            "reason": link.unavailable_reason(),
            "stats": selectors.payment_link_stats(link=link, days=30),
            "sessions": list(link.sessions.order_by("-created_at")[:10]),
            "form_token": new_form_token(),
            "nav": "links",
        },
    )


@require_POST
@member_view(WRITE)
def link_active(request: HttpRequest, link_id: str) -> HttpResponse:
    """Deactivate or activate a link (`active` = "false" or "true")."""
    link = _owned(request, link_id)
    wanted = request.POST.get("active") == "true"
    if link.is_active != wanted:
        services.payment_link_update(
            ctx=RequestContext.for_member(request, request.member), link=link, data={"is_active": wanted}
        )
    return redirect("dashboard:link", link_id=link.id)


@require_POST
@member_view(WRITE)
def link_duplicate(request: HttpRequest, link_id: str) -> HttpResponse:
    """A copy of the link with its items (`Copy of ...`), made once per click of the form."""
    link = _owned(request, link_id)
    if made := made_before(request):
        return redirect("dashboard:link", link_id=made)
    copy = services.payment_link_duplicate(
        ctx=RequestContext.for_member(request, request.member), link=link, overrides={}
    )
    remember(request, copy.id)
    return redirect("dashboard:link", link_id=copy.id)
