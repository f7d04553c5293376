"""Payment links in the dashboard: list, create, a link's page (share link, QR code, stats, sessions),
deactivate and activate. Writes go through checkout.links, as the API's do, validated by the API's own
serializer, audited with the member as the actor.

A form carries a one-time token: submitting it twice (a double click, a reload) makes one link, and the
second submit lands on the link the first made.
"""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from checkout import selectors, services
from checkout.display import display_token, format_units, qr_svg
from checkout.models import PaymentLink
from checkout.serializers import LinkItemSerializer, PaymentLinkUpdateSerializer, PaymentLinkWriteSerializer
from checkout.visits import views_settled
from core.errors import DomainError
from dashboard.auth import member_view
from dashboard.charts import daily_chart
from dashboard.forms import ApiForm, PricedForm, form_page, submitted, to, token_options, whole_number
from dashboard.once import made_before, new_form_token, remember
from dashboard.roles import WRITE
from platform_api.context import RequestContext
from platform_api.errors import PlatformError

FLASH = "dashboard_link_flash"


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
        return selectors.payment_link_get(organization=request.organization, link_id=link_id)
    except (PlatformError, DomainError):
        raise Http404("There is no such payment link.") from None


@require_http_methods(["GET"])
@member_view()
def link_list(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:100]
    found = selectors.payment_link_list(organization=request.organization, search=query or None)
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


class LinkForm(PricedForm):
    """A link's main fields, checked by the API's link serializer."""

    FIELDS = ("name", "description", "pay_to", "amount", "recipient_address", "return_url", "max_uses")

    def body(self, *, editing: bool) -> dict | None:
        """What the API's serializer gets (create, or with `editing` a whole-form update)."""
        body = {name: self.text(name) for name in ("name", "description", "return_url")}
        body |= self.priced(editing=editing)
        if self.text("max_uses") or editing:
            body["max_uses"] = whole_number(self.text("max_uses"))
        serializer = PaymentLinkUpdateSerializer if editing else PaymentLinkWriteSerializer
        return self.checked(serializer, body, partial=editing)


def _form_page(request: HttpRequest, form: LinkForm, link: PaymentLink | None) -> HttpResponse:
    return form_page(
        request, "dashboard/link_form.html", form, nav="links", link=link, tokens=token_options()
    )


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def link_create(request: HttpRequest) -> HttpResponse:
    organization = request.organization
    if request.method == "GET":
        return _form_page(request, LinkForm.new(organization), None)
    form = LinkForm(request.POST)
    return submitted(
        request,
        form,
        body=lambda: form.body(editing=False),
        write=lambda ctx, data: (
            services.payment_link_create(ctx=ctx, organization=organization, data=data).id
        ),
        done=to("dashboard:link"),
        once=True,
    ) or _form_page(request, form, None)


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def link_edit(request: HttpRequest, link_id: str) -> HttpResponse:
    link = _owned(request, link_id)
    if request.method == "GET":
        return _form_page(request, LinkForm.of(link), link)
    form = LinkForm(request.POST)
    return submitted(
        request,
        form,
        body=lambda: form.body(editing=True),
        write=lambda ctx, data: services.payment_link_update(ctx=ctx, link=link, data=data).id,
        done=to("dashboard:link", flash=(FLASH, "Link saved.")),
    ) or _form_page(request, form, link)


class ItemForm(ApiForm):
    FIELDS = ("name", "amount", "quantity", "description")

    def body(self, link: PaymentLink) -> dict | None:
        amount = self.units(
            "amount", display_token(link.chain_id, link.token_address), required=True, zero=True
        )
        body = {
            "name": self.text("name"),
            "amount": None if amount is None else str(amount),
            "quantity": whole_number(self.text("quantity") or "1"),
            "description": self.text("description"),
            "sort_order": link.items.count(),
        }
        return self.checked(LinkItemSerializer, body)


def _detail_page(request: HttpRequest, link: PaymentLink, item_form: ItemForm | None = None) -> HttpResponse:
    url = _link_url(link)
    views_settled()
    stats = selectors.payment_link_stats(link=link, days=30)
    token = display_token(link.chain_id, link.token_address)
    items = [
        {"item": item, "price": format_units(int(item.amount), token.decimals) if token else item.amount}
        for item in link.items.order_by("sort_order", "created_at")
    ]
    return render(
        request,
        "dashboard/link.html",
        {
            "member": request.member,
            "link": link,
            "price": _price(link),
            "symbol": token.symbol if token else "units",
            "url": url,
            "qr": qr_svg(url),
            "reason": link.unavailable_reason(),
            "stats": stats,
            "chart": daily_chart(
                stats["daily"],
                "views",
                days=30,
                label="Views of the link per day, last 30 days",
                unit="views",
            ),
            "sessions": list(link.sessions.order_by("-created_at")[:10]),
            "items": items,
            "item_form": item_form or ItemForm(),
            "form_token": new_form_token(),
            "flash": request.session.pop(FLASH, None),
            "nav": "links",
        },
        status=400 if item_form is not None and item_form.errors else 200,
    )


@require_http_methods(["GET"])
@member_view()
def link_detail(request: HttpRequest, link_id: str) -> HttpResponse:
    return _detail_page(request, _owned(request, link_id))


@require_POST
@member_view(WRITE)
def link_item_add(request: HttpRequest, link_id: str) -> HttpResponse:
    """Add one item to the link (through the API's item service); its price is in the link's token."""
    link = _owned(request, link_id)
    form = ItemForm(request.POST)
    return submitted(
        request,
        form,
        body=lambda: form.body(link),
        write=lambda ctx, data: services.payment_link_item_add(ctx=ctx, link=link, data=data).payment_link_id,
        done=to("dashboard:link", flash=(FLASH, "Item added.")),
        once=True,
    ) or _detail_page(request, link, form)


@require_POST
@member_view(WRITE)
def link_item_remove(request: HttpRequest, link_id: str, item_id: str) -> HttpResponse:
    link = _owned(request, link_id)
    try:
        services.payment_link_item_delete(
            ctx=RequestContext.for_member(request, request.member), link=link, item_id=item_id
        )
    except DomainError:
        raise Http404("There is no such item.") from None
    request.session[FLASH] = "Item removed."
    return redirect("dashboard:link", link_id=link.id)


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
