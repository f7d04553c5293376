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
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.http import parse_etags
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import serializers

from chains.devnet import DevnetError
from chains.registry import chain_get
from chains.wallet import devnet_transfer
from checkout import payments, selectors, sessions
from checkout.hosted_context import (
    page_context,
    status_context,
)
from checkout.hosted_form import HostedCheckoutForm
from checkout.inputs import SessionRequest
from checkout.languages import payer_language, payer_query_of
from checkout.models import CheckoutSession, PaymentLink
from checkout.page_cache import cached_page, fill_marks, render_marked
from checkout.receipts import success_redirect
from checkout.status_version import PAGE_TTL, kept_get, kept_put, status_forget, status_version
from checkout.visits import link_visit_record
from core.compiled import CompiledRead
from core.errors import DomainError
from core.geo import locate
from core.http import client_ip, ip_digest
from core.shared_redis import shared_redis
from orders.models import Order
from platform_api import ratelimit
from platform_api.fields import MetadataField, StrictUrlField

logger = logging.getLogger(__name__)


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


def _read_form(post, context: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The payer's answers and the errors to show beside each field (checkout.hosted_form)."""
    form = HostedCheckoutForm(post, context=context)
    if not form.is_valid():
        return {}, form.messages()
    return form.values(), {}


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
    by the link's and its organization's `updated_at`, which every edit of the link, its items or the
    organization's branding moves."""

    def context() -> dict[str, Any]:
        found = page_context(link, None)
        return found | {
            "cancel_url": cancel_url,
            "errors": {},
            "values": {"amount": found["bounds"].get("suggested_amount", "")},
        }

    key = (link.pk, link.updated_at, link.organization.updated_at, cancel_url)
    return cached_page(request, "pay/form.html", key, context)


def _render_form(request, context, *, errors=None, values=None, status=200) -> HttpResponse:
    return render(
        request, "pay/form.html", context | {"errors": errors or {}, "values": values or {}}, status=status
    )


def _unavailable(request, message: str, status: int = 410) -> HttpResponse:
    return render(
        request, "pay/unavailable.html", {"message": message, "title": _("Checkout")}, status=status
    )


def checkout_refused(request: HttpRequest, template: str = "pay/unavailable.html") -> HttpResponse | None:
    """Count a checkout started from this client IP; past HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE, the 429 page."""
    limit = settings.HOSTED_CHECKOUT_RATE_LIMIT_PER_MINUTE
    result = ratelimit.hit(f"hosted-checkout:{ip_digest(client_ip(request))}", limit)
    if result.allowed:
        return None
    message = _("Too many checkouts were started from your network. Try again in %(seconds)d seconds.") % {
        "seconds": result.retry_after
    }
    response = render(request, template, {"message": message, "title": _("Checkout")}, status=429)
    response["Retry-After"] = str(result.retry_after)
    return response


def _answers(values: dict[str, Any]) -> payments.PayerAnswers:
    return payments.PayerAnswers(
        pay_with=values["pay_with"],
        amount=values.get("amount"),
        discount_code=values["discount_code"],
        form_data=values["form_data"],
        shipping_option=values["shipping_option"],
        shipping_address=values["shipping_address"],
        email=values["email"],
        locale=translation.get_language() or "",
    )


def _pay(request, session: CheckoutSession, answers: payments.PayerAnswers) -> None:
    """The payer sends the form of a session that already exists (a merchant's, a widget's)."""
    session = sessions.session_prepare(
        session=session,
        amount=answers.amount,
        discount_code=answers.discount_code,
        form_data=answers.form_data,
        shipping_option=answers.shipping_option,
        shipping_address=answers.shipping_address,
        customer_email=answers.email,
        locale=answers.locale,
    )
    chain_id, address = answers.pay_with
    payments.session_order_create(
        session=session, src_chain=chain_id, src_token=address, payer_ip=client_ip(request)
    )


@never_cache
@require_http_methods(["GET", "POST"])
@payer_language
def link_page(request: HttpRequest, short_code: str) -> HttpResponse:
    link = selectors.payment_link_by_code(short_code)
    if link is None:
        return _unavailable(request, _("There is no payment link at this address."), status=404)
    reason = link.unavailable_reason()
    if reason:
        return _unavailable(request, reason)
    params = sessions.payer_url_params(link, url_params(request.GET)) if request.GET else {}
    request.payer_query = payer_query_of(params)  # what the language switch keeps
    if request.method == "GET":
        _record_visit(request, link)
        return HttpResponse(link_form_html(request, link, params.get("cancel_url")))
    context = page_context(link, None) | {"cancel_url": params.get("cancel_url")}
    values, errors = _read_form(request.POST, context)
    if errors:
        return _render_form(request, context, errors=errors, values=request.POST, status=400)
    if refused := checkout_refused(request):
        return refused
    try:  # a refused payment leaves no session (and holds no discount use)
        started = payments.link_checkout_start(
            link=link,
            ask=SessionRequest.from_wire({**params, "payment_link_id": link.id}),
            answers=_answers(values),
            payer_ip=client_ip(request),
        )
    except DomainError as exc:
        return _render_form(request, context, errors=_errors_of(exc), values=request.POST, status=400)
    _keep_deposit_page(request, started)
    return redirect("pay-session", session_id=started.session.id)


def _keep_deposit_page(request: HttpRequest, started: payments.Started) -> None:
    """The deposit page the payer is sent to, rendered now from what the checkout has just written (nothing
    to read; its order has received nothing) and kept under the version its commit set: the page is rendered
    once per session, and the redirect's view of it is one Redis read."""
    if shared_redis() is None:
        return
    session, order = started.session, started.order
    html = render_marked(request, "pay/session.html", status_context(session, order, received=0))
    kind = f"page:{translation.get_language()}"
    kept_put(session.id, started.version, kind, html.encode(), ttl=PAGE_TTL)


# The deposit page's read, compiled once (core.compiled); a discount code or a widget is read if one is named.
_session_with_link = CompiledRead(
    lambda session_id: (
        CheckoutSession.objects.platform()
        .select_related("payment_link", "organization")
        .filter(pk=session_id)
    )
)


def _session_or_404(session_id: str) -> CheckoutSession:
    session = _session_with_link.first(session_id)
    if session is None:
        raise Http404(_("There is no checkout at this address."))
    return session


@never_cache
@require_http_methods(["GET", "POST"])
@payer_language
def session_page(request: HttpRequest, session_id: str) -> HttpResponse:
    # The deposit page as it stands is kept per status version and language: a refresh (the page refreshes
    # itself every 5 s without JavaScript) or another tab is answered from Redis (checkout.status_version).
    version = status_version(session_id) if request.method == "GET" and set(request.GET) <= {"lang"} else None
    kind = f"page:{translation.get_language()}"
    if version is not None and (kept := kept_get(session_id, version, kind)) is not None:
        return HttpResponse(fill_marks(request, kept.decode()))
    try:
        session = _session_or_404(session_id)
    except Http404 as missing:
        if version is not None:
            status_forget(session_id)  # no version is kept for a session that does not exist
        return _unavailable(request, str(missing), status=404)
    order = payments.session_current_order(session)
    if payments.session_takes_a_token(session, order, change=request.GET.get("change") == "1"):
        context = page_context(None, session) | {
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
            _pay(request, session, _answers(values))
        except DomainError as exc:
            return _render_form(request, context, errors=_errors_of(exc), values=request.POST, status=400)
        return redirect("pay-session", session_id=session.id)
    if request.method == "POST":
        return redirect("pay-session", session_id=session.id)
    html = render_marked(request, "pay/session.html", status_context(session, order))
    if version is not None:
        kept_put(session_id, version, kind, html.encode(), ttl=PAGE_TTL)
    return HttpResponse(fill_marks(request, html))


_session_alone = CompiledRead(lambda session_id: CheckoutSession.objects.platform().filter(pk=session_id))


@require_GET
def session_status(request: HttpRequest, session_id: str) -> HttpResponse:
    """What the page polls: the session's and its order's status, what arrived, what remains, where to go.

    With a shared Redis, the answer carries the session's status version as its ETag, and a poll that names
    the current one gets 304 without the database (checkout.status_version). The browser keeps the body
    (`no-cache`: stored, always revalidated) and hands it to the page's script again. The body is read from
    the database once per version and kept in Redis under it: a poll of another tab, or one without an ETag,
    is one more Redis read.
    """
    version = status_version(session_id)
    etag = f'"{version}"' if version else None
    if etag is not None and etag in parse_etags(request.headers.get("If-None-Match", "")):
        response: HttpResponse = HttpResponseNotModified()
    elif version is not None and (kept := kept_get(session_id, version, "poll")) is not None:
        response = HttpResponse(kept, content_type="application/json")
    else:
        session = _session_alone.first(session_id)
        if session is None:
            status_forget(session_id)
            return JsonResponse({"error": "There is no checkout at this address."}, status=404)
        data = payments.session_status_data(session)
        data["success_url"] = success_redirect(session) if session.status == "completed" else None
        response = JsonResponse(data)
        if version is not None:
            kept_put(session_id, version, "poll", response.content)
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
