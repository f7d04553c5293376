"""The hosted checkout page: `/pay/{short_code}` (a payment link) and `/pay/s/{session_id}` (a session).

Server-rendered forms, no JavaScript needed to pay: the payer fills the
link's form, picks a token of the registry to pay with, and gets the deposit
address with a QR code and the exact amount. The status follows the order by
polling `/pay/s/{id}/status` (a small script; without it the page refreshes
itself). On devnets a button pays from an anvil account, as `manage.py
pay_order` does.
"""

from __future__ import annotations

import logging
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import parse_etags
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import serializers

from chains.devnet import DevnetError
from chains.registry import chain_get
from chains.wallet import devnet_transfer
from checkout import payments, sessions
from checkout.display import display_token, format_units, luminance, parse_units, payable_tokens, qr_svg
from checkout.inputs import SessionRequest
from checkout.models import PaymentLink, PlatformCheckoutSession
from checkout.page_cache import cached_page
from checkout.status_version import status_forget, status_version
from checkout.visits import link_visit_record
from core.errors import DomainError
from core.geo import locate
from core.http import client_ip, ip_digest
from orders.models import Order
from platform_api import ratelimit
from platform_api.fields import MetadataField, StrictUrlField

logger = logging.getLogger(__name__)


ADDRESS_PARTS = ("line1", "line2", "city", "state", "zip", "country")


TEXT_LIMIT = 500


PAYER_ACCOUNT = 1  # the devnet wallet pays from anvil's account 1, as `pay_order` does by default


class UrlParamsSerializer(serializers.Serializer):
    """The hosted page's URL parameters; they reach the session and its webhooks."""

    client_reference_id = serializers.CharField(max_length=200, required=False, allow_blank=True)
    metadata = MetadataField(required=False)
    success_url = StrictUrlField(max_length=2048, required=False, allow_blank=True)
    cancel_url = StrictUrlField(max_length=2048, required=False, allow_blank=True)
    utm_source = serializers.CharField(max_length=200, required=False, allow_blank=True)
    utm_medium = serializers.CharField(max_length=200, required=False, allow_blank=True)
    utm_campaign = serializers.CharField(max_length=200, required=False, allow_blank=True)


def url_params(query) -> dict[str, Any]:
    """`metadata[key]=value` pairs become `metadata`; bad values are dropped, never a failed checkout."""
    raw: dict[str, Any] = {name: query[name] for name in UrlParamsSerializer().fields if name in query}
    metadata = {key[9:-1]: query[key] for key in query if key.startswith("metadata[") and key.endswith("]")}
    if metadata:
        raw["metadata"] = metadata
    params = UrlParamsSerializer(data=raw)
    if params.is_valid():
        return dict(params.validated_data)
    return {name: value for name, value in raw.items() if name not in params.errors}


def _page_context(link: PaymentLink | None, session: PlatformCheckoutSession | None) -> dict[str, Any]:
    source = link or (session.payment_link if session else None)
    widget = session.widget if session and session.widget_id else None  # a session a widget started
    accent = (
        source.theme_color
        if source and source.theme_color
        else (widget.theme or {}).get("primary_color")
        if widget
        else None
    ) or "#1f4fd1"
    chain_id = session.chain_id if session else link.chain_id  # type: ignore[union-attr]
    token_address = session.token_address if session else link.token_address  # type: ignore[union-attr]
    token = display_token(chain_id, token_address)
    decimals = token.decimals if token else 0
    chain = chain_get(chain_id)
    fixed = session.amount if session and session.amount is not None else (source.amount if source else None)
    items = list(source.items.all()) if source else []
    return {
        "link": source,
        "session": session,
        "token": token,
        "chain_name": chain.name if chain else str(chain_id),
        "fixed_amount": format_units(int(fixed), decimals) if fixed is not None else None,
        "bounds": {
            name: format_units(int(value), decimals)
            for name in ("min_amount", "max_amount", "suggested_amount")
            if source and (value := getattr(source, name)) is not None
        },
        "items": [
            {
                "name": i.name,
                "quantity": i.quantity,
                "description": i.description,
                "amount": format_units(int(i.amount), decimals),
            }
            for i in items
        ],
        "form_fields": (source.form_schema or {}).get("fields", []) if source else [],
        "shipping_options": [
            {**option, "display": format_units(int(option["amount"]), decimals)}
            for option in (source.shipping_options if source else [])
        ],
        "collect_shipping_address": bool(source and source.collect_shipping_address),
        "address_parts": ADDRESS_PARTS,
        "pay_with": payable_tokens(),
        "title": source.name if source else widget.name if widget else "Checkout",
        "theme_color": accent,
        "on_accent": "#111111" if luminance(accent) > 0.4 else "#ffffff",
        "button_text": (source.button_text if source else "Pay"),
        "business_name": ((source.branding or {}).get("business_name") if source else "") or "",
    }


def _read_form(post, context: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The payer's answers and the errors to show beside each field."""
    errors: dict[str, str] = {}
    values: dict[str, Any] = {"form_data": {}, "email": ""}
    token = context["token"]
    if context["fixed_amount"] is None:
        amount = parse_units(post.get("amount", ""), token.decimals if token else 0)
        if amount is None:
            errors["amount"] = "Enter an amount greater than zero."
        values["amount"] = amount
    for field in context["form_fields"]:
        name = f"field_{field['id']}"
        if field["type"] == "address":
            answer: Any = {part: post.get(f"{name}_{part}", "").strip()[:200] for part in ADDRESS_PARTS}
            empty = not answer["line1"]
        elif field["type"] == "checkbox":
            answer = post.get(name) == "on"
            empty = not answer
        else:
            answer = post.get(name, "").strip()[:TEXT_LIMIT]
            empty = not answer
            if answer and field["type"] == "email" and "@" not in answer:
                errors[name] = "Enter an email address."
            if answer and field["type"] == "number":
                try:
                    Decimal(answer)
                except InvalidOperation:
                    errors[name] = "Enter a number."
            if answer and field["type"] == "select" and answer not in field.get("options", []):
                errors[name] = "Choose one of the options."
        if field.get("required") and empty:
            errors[name] = f"{field['label']} is required."
        values["form_data"][field["id"]] = answer
        if field["type"] == "email" and answer and not values.get("email"):
            values["email"] = answer
    options = {option["id"]: option for option in context["shipping_options"]}
    values["shipping_option"] = None
    if options:
        chosen = options.get(post.get("shipping_option", ""))
        if chosen is None:
            errors["shipping_option"] = "Choose a shipping option."
        else:
            values["shipping_option"] = {k: v for k, v in chosen.items() if k != "display"}
    values["shipping_address"] = None
    if context["collect_shipping_address"]:
        address = {part: post.get(f"ship_{part}", "").strip()[:200] for part in ADDRESS_PARTS}
        if not address["line1"] or not address["city"]:
            errors["ship_line1"] = "Enter the shipping address (street and city)."
        values["shipping_address"] = address
    values["discount_code"] = post.get("discount_code", "").strip()[:50]
    chain_id, _, address = post.get("pay_with", "").partition(":")
    if not any(option["value"] == post.get("pay_with") for option in context["pay_with"]):
        errors["pay_with"] = "Choose the token you pay with."
    else:
        values["pay_with"] = (int(chain_id), address)
    return values, errors


def _record_visit(request: HttpRequest, link: PaymentLink) -> None:
    """A view of the link's page: country, referrer, user agent and UTM, never the IP address."""
    link_visit_record(
        link_id=link.pk,
        country=(locate(request).country or "")[:2],
        referrer=request.headers.get("Referer", "")[:500],
        user_agent=request.headers.get("User-Agent", "")[:500],
        utm_source=request.GET.get("utm_source", "")[:200],
        utm_medium=request.GET.get("utm_medium", "")[:200],
        utm_campaign=request.GET.get("utm_campaign", "")[:200],
    )


def _errors_of(exc: DomainError) -> dict[str, str]:
    """A service's refusal beside the field it names (the token choice is the form's `pay_with`)."""
    field = {"token": "pay_with", None: "form"}.get(exc.field, exc.field)
    known = {"amount", "discount_code", "pay_with", "form"}
    return {field if field in known else "form": exc.message}


def link_form_html(request: HttpRequest, link: PaymentLink, cancel_url: str | None) -> str:
    """The link page's form as every payer gets it, from the process's cache (checkout/page_cache.py), keyed
    by the link's `updated_at`, which every edit of the link or its items moves."""

    def context() -> dict[str, Any]:
        found = _page_context(link, None)
        return found | {
            "cancel_url": cancel_url,
            "errors": {},
            "values": {"amount": found["bounds"].get("suggested_amount", "")},
        }

    return cached_page(request, "pay/form.html", (link.pk, link.updated_at, cancel_url), context)


def _render_form(request, context, *, errors=None, values=None, status=200) -> HttpResponse:
    return render(
        request, "pay/form.html", context | {"errors": errors or {}, "values": values or {}}, status=status
    )


def _unavailable(request, message: str, status: int = 410) -> HttpResponse:
    return render(request, "pay/unavailable.html", {"message": message, "title": "Checkout"}, status=status)


def checkout_refused(request: HttpRequest, template: str = "pay/unavailable.html") -> HttpResponse | None:
    """Count a checkout started from this client IP; past HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE, the 429 page."""
    limit = settings.HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE
    result = ratelimit.hit(f"hosted-checkout:{ip_digest(client_ip(request))}", limit)
    if result.allowed:
        return None
    message = f"Too many checkouts were started from your network. Try again in {result.retry_after} seconds."
    response = render(request, template, {"message": message, "title": "Checkout"}, status=429)
    response["Retry-After"] = str(result.retry_after)
    return response


def _pay(request, session: PlatformCheckoutSession, values: dict[str, Any]) -> None:
    session = sessions.session_prepare(
        session=session,
        amount=values.get("amount"),
        discount_code=values["discount_code"],
        form_data=values["form_data"],
        shipping_option=values["shipping_option"],
        shipping_address=values["shipping_address"],
        customer_email=values["email"],
    )
    chain_id, address = values["pay_with"]
    payments.session_order_create(
        session=session, src_chain=chain_id, src_token=address, payer_ip=client_ip(request)
    )


@never_cache
@require_http_methods(["GET", "POST"])
def link_page(request: HttpRequest, short_code: str) -> HttpResponse:
    link = (
        PaymentLink.objects.select_related("organization")
        .filter(short_code=short_code, deleted_at__isnull=True)
        .first()
    )
    if link is None:
        return _unavailable(request, "There is no payment link at this address.", status=404)
    reason = link.unavailable_reason()
    if reason:
        return _unavailable(request, reason)
    params = sessions.payer_url_params(link, url_params(request.GET)) if request.GET else {}
    if request.method == "GET":
        _record_visit(request, link)
        return HttpResponse(link_form_html(request, link, params.get("cancel_url")))
    context = _page_context(link, None) | {"cancel_url": params.get("cancel_url")}
    values, errors = _read_form(request.POST, context)
    if errors:
        return _render_form(request, context, errors=errors, values=request.POST, status=400)
    if refused := checkout_refused(request):
        return refused
    try:
        with transaction.atomic():  # a refused payment leaves no session (and holds no discount use)
            session = sessions.platform_session_create(
                organization=link.organization,
                ask=SessionRequest.from_wire({**params, "payment_link_id": link.id}),
            )
            _pay(request, session, values)
    except DomainError as exc:
        return _render_form(request, context, errors=_errors_of(exc), values=request.POST, status=400)
    return redirect("pay-session", session_id=session.id)


def _session_or_404(session_id: str) -> PlatformCheckoutSession:
    session = (
        PlatformCheckoutSession.objects.select_related(
            "payment_link", "organization", "discount_code", "widget"
        )
        .filter(pk=session_id)
        .first()
    )
    if session is None:
        raise Http404("There is no checkout at this address.")
    return session


def success_redirect(session: PlatformCheckoutSession) -> str | None:
    url = session.success_url or (session.payment_link.return_url if session.payment_link else "")
    return url.replace("{SESSION_ID}", session.id) if url else None


@never_cache
@require_http_methods(["GET", "POST"])
def session_page(request: HttpRequest, session_id: str) -> HttpResponse:
    try:
        session = _session_or_404(session_id)
    except Http404 as missing:
        return _unavailable(request, str(missing), status=404)
    order = payments.session_current_order(session)
    if payments.session_takes_a_token(session, order, change=request.GET.get("change") == "1"):
        context = _page_context(None, session) | {
            "cancel_url": session.cancel_url.replace("{SESSION_ID}", session.id)
        }
        if request.method == "GET":
            return _render_form(request, context)
        values, errors = _read_form(request.POST, context)
        if errors:
            return _render_form(request, context, errors=errors, values=request.POST, status=400)
        if refused := checkout_refused(request):
            return refused
        try:
            _pay(request, session, values)
        except DomainError as exc:
            return _render_form(request, context, errors=_errors_of(exc), values=request.POST, status=400)
        return redirect("pay-session", session_id=session.id)
    if request.method == "POST":
        return redirect("pay-session", session_id=session.id)
    return render(request, "pay/session.html", _status_context(session, order))


def _status_context(session: PlatformCheckoutSession, order: Order | None) -> dict[str, Any]:
    context = _page_context(None, session)
    status = payments.session_status_data(session, order)
    if order is not None:
        token = display_token(order.src_chain, order.src_token_address)
        decimals = token.decimals if token else 0
        chain = chain_get(order.src_chain)
        context |= {
            "order": order,
            "pay_token": token,
            "pay_chain": chain,
            "pay_amount": format_units(int(order.src_amount), decimals),
            "remaining": format_units(int(status["order"]["remaining"]), decimals),
            "received": format_units(int(status["order"]["received"]), decimals),
            "qr_svg": qr_svg(order.global_address),
            "devnet_wallet": bool(chain and chain.devnet and settings.DEVELOPMENT),
        }
    return context | {
        "status": status,
        "success_url": success_redirect(session),
        "now_ms": int(timezone.now().timestamp() * 1000),
        "receipt": _receipt(session, order, context) if session.status == "completed" and order else None,
    }


def _explorer_link(chain_id: int, tx_hash: str) -> str | None:
    chain = chain_get(chain_id)
    return f"{chain.explorer_url.rstrip('/')}/tx/{tx_hash}" if chain and chain.explorer_url else None


def _receipt(session: PlatformCheckoutSession, order: Order, context: dict[str, Any]) -> dict[str, Any]:
    """What the completed page shows as the payer's receipt: what was paid, where, when, the transactions
    (with explorer links where the chain has an explorer), the merchant's reference and the way back."""
    transactions = [
        {"label": "Payment transaction", "hash": tx.tx_hash, "url": _explorer_link(tx.chain, tx.tx_hash)}
        for tx in order.deposit_txs.filter(counted=True).order_by("created_at")
    ] + [
        {"label": "Delivery transaction", "hash": tx.tx_hash, "url": _explorer_link(tx.chain, tx.tx_hash)}
        for tx in order.relay_txs.filter(status="success").order_by("created_at")
    ]
    link = session.payment_link
    return {
        "amount": context["received"],
        "symbol": context["pay_token"].symbol if context["pay_token"] else "",
        "chain": context["pay_chain"].name if context["pay_chain"] else str(order.src_chain),
        "reference": session.client_reference_id,
        "at": session.completed_at or order.filled_at,
        "transactions": transactions,
        "back_url": success_redirect(session) or (link.return_url if link else ""),
        "back_label": (link.return_label if link else "") or "Back to the shop",
    }


@require_GET
def session_status(request: HttpRequest, session_id: str) -> HttpResponse:
    """What the page polls: the session's and its order's status, what arrived, what remains, where to go.

    With a shared Redis, the answer carries the session's status version as its ETag, and a poll that names
    the current one gets 304 without the database (checkout.status_version). The browser keeps the body
    (`no-cache`: stored, always revalidated) and hands it to the page's script again.
    """
    version = status_version(session_id)
    etag = f'"{version}"' if version else None
    if etag is not None and etag in parse_etags(request.headers.get("If-None-Match", "")):
        response: HttpResponse = HttpResponseNotModified()
    else:
        session = PlatformCheckoutSession.objects.filter(pk=session_id).first()
        if session is None:
            status_forget(session_id)
            return JsonResponse({"error": "There is no checkout at this address."}, status=404)
        data = payments.session_status_data(session)
        data["success_url"] = success_redirect(session) if session.status == "completed" else None
        response = JsonResponse(data)
    if etag is not None:
        response["ETag"] = etag
    response["Cache-Control"] = "no-cache, private"
    return response


@require_POST
def session_devnet_pay(request: HttpRequest, session_id: str) -> HttpResponse:
    """Development only: pay what the session's order still owes from an anvil account on its devnet."""
    session = _session_or_404(session_id)
    order = payments.session_current_order(session)
    chain = chain_get(order.src_chain) if order else None
    if order is None or chain is None or not chain.devnet or not settings.DEVELOPMENT:
        raise Http404("no devnet payment here")
    remaining = int(payments.session_status_data(session)["order"]["remaining"])
    if remaining > 0 and order.status == Order.Status.SCANNING_DEPOSIT:
        try:
            devnet_transfer(
                chain=chain,
                token=order.src_token_address,
                to=order.global_address,
                amount=remaining,
                from_account=PAYER_ACCOUNT,
            )
        except DevnetError as exc:
            logger.warning("Devnet wallet for %s: %s", session.id, exc)
    return redirect("pay-session", session_id=session.id)
