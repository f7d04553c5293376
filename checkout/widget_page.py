"""A widget's embeddable page, `/widgets/{short_code}`: a small card made to sit in the merchant's iframe.

- checkout: the amount (or "you choose the amount") and a button;
- deposit: which of the accepted tokens to deposit, and a button;
- swap: the pair, and a live quote for an amount the visitor types;
- nft: the collection, the token id and the chain.

The button of a checkout or deposit widget starts a platform checkout session
for the widget's recipient and opens the hosted checkout (`/pay/s/{id}`) in a
new tab: the checkout page refuses to be framed, so the payer always sees its
address bar. Each view, each checkout started (an interaction) and each
completed payment is a `WidgetEvent`; the viewer's IP address is never stored.

The page has no CSRF token: it is framed by other sites, where the CSRF
cookie is never sent, and it carries no authority to forge. Its POST only
starts an anonymous checkout, which anyone may do.
"""

from __future__ import annotations

import logging
from typing import Any

from csp.decorators import csp_replace
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from chains.registry import chain_get
from checkout import sessions
from checkout.display import display_token, format_units, luminance, parse_units
from checkout.hosted import checkout_refused
from checkout.languages import payer_language
from checkout.models import Widget, WidgetEvent
from checkout.page_cache import cached_page
from checkout.widgets import deposit_options, widget_event_record
from core.compiled import CompiledRead
from core.errors import DomainError, InvalidRequest
from orders.inputs import EXACT_INPUT, QuoteInput
from orders.services import quote_build
from platform_api.errors import PlatformError

logger = logging.getLogger(__name__)
DEFAULT_COLOR = "#1f4fd1"


def _chain_name(chain_id: int) -> str:
    chain = chain_get(chain_id)
    return chain.name if chain else str(chain_id)


def _token_label(chain_id: int, address: str) -> str:
    token = display_token(chain_id, address)
    return _("%(token)s on %(chain)s") % {
        "token": token.symbol if token else address,
        "chain": _chain_name(chain_id),
    }


def _context(widget: Widget) -> dict[str, Any]:
    theme = widget.theme or {}
    accent = theme.get("primary_color") or DEFAULT_COLOR
    config = widget.config
    context: dict[str, Any] = {
        "widget": widget,
        "title": widget.name,
        "accent": accent,
        "on_accent": "#111111" if luminance(accent) > 0.4 else "#ffffff",
        "radius": theme.get("border_radius", 12),
        "font_family": theme.get("font_family") or "",
        "dark": bool(theme.get("dark_mode")),
    }
    if widget.widget_type == Widget.Type.CHECKOUT:
        token = display_token(config["destination_chain_id"], config["destination_token"])
        amount = config.get("amount")
        context |= {
            "pays": _token_label(config["destination_chain_id"], config["destination_token"]),
            "amount": format_units(int(amount), token.decimals) if amount and token else None,
            "symbol": token.symbol if token else "",
        }
    elif widget.widget_type == Widget.Type.DEPOSIT:
        context["options"] = [
            {
                "value": f"{chain_id}:{address}",
                "label": _("%(token)s on %(chain)s")
                % {"token": token.symbol, "chain": _chain_name(chain_id)},
            }
            for chain_id, address, token in deposit_options(config)
        ]
    elif widget.widget_type == Widget.Type.SWAP:
        context |= {
            "src": _token_label(config["src_chain_id"], config["src_token"]),
            "dst": _token_label(config["dst_chain_id"], config["dst_token"]),
        }
    else:
        context |= {"chain_name": _chain_name(config["chain_id"])}
    return context


def _swap_quote(widget: Widget, text: str) -> dict[str, Any]:
    """What `text` of the source token buys of the destination token now (the quote provider's price)."""
    config = widget.config
    src = display_token(config["src_chain_id"], config["src_token"])
    text = text.replace(",", ".") if "," in text and "." not in text else text  # a decimal comma (es)
    amount = parse_units(text, src.decimals) if src else None
    if amount is None:
        return {"error": _("Enter an amount greater than zero.")}
    try:
        quote, _unused = quote_build(
            QuoteInput(
                type="swap",
                trade_type=EXACT_INPUT,
                amount=amount,
                src_chain=config["src_chain_id"],
                dst_chain=config["dst_chain_id"],
                src_token_address=config["src_token"],
                dst_token_address=config["dst_token"],
            )
        )
    except DomainError as exc:
        return {"error": exc.message}
    out = quote["currencyOut"]
    return {
        "receive": out.get("amountFormatted") or out["amount"],
        "symbol": out["currency"].get("symbol", ""),
    }


def _unavailable(request: HttpRequest, message: str, status: int) -> HttpResponse:
    return render(request, "widgets/unavailable.html", {"message": message}, status=status)


def _start_checkout(request: HttpRequest, widget: Widget) -> HttpResponse:
    try:
        session = sessions.widget_session_create(widget=widget, deposit=request.POST.get("deposit", ""))
    except (DomainError, PlatformError) as exc:
        if isinstance(exc, InvalidRequest) and exc.field == "deposit":
            return render(
                request, "widgets/widget.html", _context(widget) | {"error": exc.message}, status=400
            )
        # The widget's own config no longer makes a checkout (a token left the registry, say).
        logger.warning("Widget %s could not start a checkout: %s", widget.id, exc)
        return _unavailable(request, _("This widget cannot take payments right now."), status=409)
    return redirect("pay-session", session_id=session.id)


# Every visitor of a widget's page reads it: its SQL is compiled once (core.compiled).
_widget_by_code = CompiledRead(
    lambda short_code: Widget.objects.select_related("organization").filter(short_code=short_code)
)


@never_cache
@xframe_options_exempt
@csp_replace({"frame-ancestors": None})  # the one page any site may frame; its code keeps the strict policy
@csrf_exempt
@require_http_methods(["GET", "POST"])
@payer_language
def widget_page(request: HttpRequest, short_code: str) -> HttpResponse:
    widget = _widget_by_code.first(short_code)
    if widget is None:
        return _unavailable(request, _("There is no widget at this address."), status=404)
    if not widget.is_active:
        return _unavailable(request, _("This widget is turned off."), status=410)
    if request.method == "POST":
        if widget.widget_type not in (Widget.Type.CHECKOUT, Widget.Type.DEPOSIT):
            return redirect("widget-page", short_code=short_code)
        if refused := checkout_refused(request, "widgets/unavailable.html"):
            return refused
        return _start_checkout(request, widget)
    if widget.widget_type != Widget.Type.SWAP or not request.GET.get("amount"):
        widget_event_record(widget.id, WidgetEvent.Kind.VIEW)
        key = (widget.pk, widget.updated_at)  # every edit moves updated_at (checkout/page_cache.py)
        return HttpResponse(cached_page(request, "widgets/widget.html", key, lambda: _context(widget)))
    amount = request.GET["amount"][:40]
    context = _context(widget) | {"quote": _swap_quote(widget, amount), "quoted": amount}
    widget_event_record(widget.id, WidgetEvent.Kind.INTERACTION)
    status = 400 if "error" in context["quote"] else 200  # an amount it cannot quote, said beside it
    return render(request, "widgets/widget.html", context, status=status)
