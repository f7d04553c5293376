"""Webhooks in the dashboard: why deliveries stopped and what to do about it.

The endpoints with their state (a disabled one says why), each endpoint's delivery log (the request body it
sent, each attempt's response code, time and error), and the actions the API has: retry one failed delivery,
send again everything that failed since a time, re-enable, rotate the secret (shown once), send a test.
Actions need the developer role or above, go through webhooks.services and are audited with the member.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import DomainError
from dashboard.auth import member_view
from dashboard.forms import ApiForm, form_page, submitted, to
from dashboard.roles import DEVELOP
from platform_api.context import RequestContext
from platform_api.errors import PlatformError
from webhooks import selectors, services
from webhooks.events import EVENT_TYPES
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.serializers import WebhookCreateSerializer, WebhookUpdateSerializer

LOG_SIZE = 50
FLASH = "dashboard_flash"
SHOWN_ONCE = "dashboard_new_secret"  # a new signing secret, shown on the next page once


def _endpoint(request: HttpRequest, webhook_id: str) -> WebhookEndpoint:
    try:
        return selectors.webhook_endpoint_get(organization=request.organization, webhook_id=webhook_id)
    except (PlatformError, DomainError):
        raise Http404("There is no such webhook endpoint.") from None


def _flash(request: HttpRequest, text: str, *, bad: bool = False) -> None:
    request.session[FLASH] = {"text": text, "bad": bad}


@require_GET
@member_view()
def webhook_list(request: HttpRequest) -> HttpResponse:
    # "Failed" is what the home's "Needs attention" counts: deliveries failed in the last 7 days (the endpoint's
    # own counter is its failures in a row, which a success resets).
    week_ago = timezone.now() - timedelta(days=7)
    endpoints = list(
        selectors.webhook_endpoint_list(organization=request.organization)
        .annotate(
            failed_week=Count(
                "deliveries", filter=Q(deliveries__status="failed", deliveries__created_at__gte=week_ago)
            )
        )
        .order_by("-created_at")
    )
    return render(
        request,
        "dashboard/webhooks.html",
        {"member": request.member, "endpoints": endpoints, "nav": "webhooks"},
    )


class EndpointForm(ApiForm):
    """An endpoint's URL and the events it gets: every event ("*"), or those ticked."""

    FIELDS = ("url", "description", "every_event")
    ALIASES = {"events": "every_event"}

    def __init__(self, post=None, initial=None):
        super().__init__(post, initial)
        self.events = list(post.getlist("events") if post is not None else (initial or {}).get("events", []))
        if post is None and initial and initial.get("events") == ["*"]:
            self.values["every_event"] = "on"

    @classmethod
    def of(cls, endpoint: WebhookEndpoint) -> EndpointForm:
        return cls(
            initial={"url": endpoint.url, "description": endpoint.description, "events": endpoint.events}
        )

    def body(self, *, editing: bool) -> dict | None:
        events = ["*"] if self.values["every_event"] == "on" else self.events
        if not events:
            self.refuse("every_event", "Choose the events to send, or every event.")
        body = {"url": self.text("url"), "events": events}
        if editing:
            return self.checked(WebhookUpdateSerializer, body, partial=True)
        return self.checked(WebhookCreateSerializer, body | {"description": self.text("description")})


def _form_page(request: HttpRequest, form: EndpointForm, endpoint: WebhookEndpoint | None) -> HttpResponse:
    return form_page(
        request,
        "dashboard/webhook_form.html",
        form,
        nav="webhooks",
        endpoint=endpoint,
        event_types=EVENT_TYPES,
    )


@require_http_methods(["GET", "POST"])
@member_view(DEVELOP)
def webhook_create(request: HttpRequest) -> HttpResponse:
    """A new endpoint; its signing secret is shown once, on the endpoint's page that follows."""
    if request.method == "GET":
        return _form_page(request, EndpointForm(initial={"every_event": "on"}), None)
    form = EndpointForm(request.POST)

    def write(ctx: RequestContext, data: dict) -> str:
        endpoint, secret = services.webhook_endpoint_create(ctx=ctx, **data)
        request.session[SHOWN_ONCE] = secret
        return endpoint.id

    added = {"text": "Endpoint added. Copy its signing secret now: it is not shown again.", "bad": False}
    return submitted(
        request,
        form,
        body=lambda: form.body(editing=False),
        write=write,
        done=to("dashboard:webhook", flash=(FLASH, added)),
        once=True,
    ) or _form_page(request, form, None)


@require_http_methods(["GET", "POST"])
@member_view(DEVELOP)
def webhook_edit(request: HttpRequest, webhook_id: str) -> HttpResponse:
    endpoint = _endpoint(request, webhook_id)
    if request.method == "GET":
        return _form_page(request, EndpointForm.of(endpoint), endpoint)
    form = EndpointForm(request.POST)
    return submitted(
        request,
        form,
        body=lambda: form.body(editing=True),
        write=lambda ctx, data: services.webhook_endpoint_update(ctx=ctx, endpoint=endpoint, **data).id,
        done=to("dashboard:webhook", flash=(FLASH, {"text": "Endpoint saved.", "bad": False})),
    ) or _form_page(request, form, endpoint)


@require_GET
@member_view()
def webhook_detail(request: HttpRequest, webhook_id: str) -> HttpResponse:
    endpoint = _endpoint(request, webhook_id)
    status = request.GET.get("status", "")
    deliveries = WebhookDelivery.objects.filter(endpoint=endpoint)
    if status in WebhookDelivery.Status.values:
        deliveries = deliveries.filter(status=status)
    log = list(deliveries.order_by("-created_at", "-id")[:LOG_SIZE])
    attempts: dict[str, list[WebhookAttempt]] = {}
    for attempt in WebhookAttempt.objects.filter(delivery__in=log).order_by("number"):
        attempts.setdefault(attempt.delivery_id, []).append(attempt)
    return render(
        request,
        "dashboard/webhook.html",
        {
            "member": request.member,
            "endpoint": endpoint,
            "log": [{"delivery": d, "attempts": attempts.get(d.id, [])} for d in log],
            "status": status,
            "statuses": WebhookDelivery.Status.values,
            "flash": request.session.pop(FLASH, None),
            "secret": request.session.pop(SHOWN_ONCE, None),
            "since_default": (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
            "nav": "webhooks",
        },
    )


@require_POST
@member_view(DEVELOP)
def webhook_action(request: HttpRequest, webhook_id: str, action: str) -> HttpResponse:
    endpoint = _endpoint(request, webhook_id)
    ctx = RequestContext.for_member(request, request.member)
    try:
        if action == "retry":
            delivery = WebhookDelivery.objects.filter(
                endpoint=endpoint, pk=request.POST.get("delivery", "")
            ).first()
            if delivery is None:
                raise Http404("There is no such delivery.")
            result = services.webhook_delivery_retry(delivery=delivery)
            _flash(request, f"Retried {delivery.id}: {_said(result)}", bad=not result.succeeded)
        elif action == "resend-failed":
            since = _since(request.POST.get("since", ""))
            if since is None:
                _flash(
                    request, "Enter the date and time to send again from, such as 2026-11-25T09:00.", bad=True
                )
            else:
                count = services.webhook_deliveries_requeue_failed(
                    deliveries=WebhookDelivery.objects.filter(endpoint=endpoint, created_at__gte=since)
                )
                _flash(request, f"{count} failed deliver{'y' if count == 1 else 'ies'} will be sent again.")
        elif action == "enable":
            if not endpoint.is_active:
                services.webhook_endpoint_update(ctx=ctx, endpoint=endpoint, is_active=True)
            _flash(request, "The endpoint is enabled; what it held back is being sent.")
        elif action == "rotate":
            _, secret = services.webhook_endpoint_rotate_secret(ctx=ctx, endpoint=endpoint)
            request.session[SHOWN_ONCE] = secret
            _flash(
                request,
                "A new signing secret: copy it now, it is not shown again. The old one signs beside it for a while.",
            )
        elif action == "delete":
            if request.POST.get("confirm") != "yes":
                _flash(request, "Nothing was deleted: tick the box to confirm first.", bad=True)
            else:
                services.webhook_endpoint_delete(ctx=ctx, endpoint=endpoint)
                return redirect("dashboard:webhooks")
        elif action == "test":
            result = services.webhook_endpoint_send_test(endpoint=endpoint)
            _flash(request, f"Test delivery: {_said(result)}", bad=not result.succeeded)
        else:
            raise Http404("No such action.")
    except (DomainError, PlatformError) as exc:
        _flash(request, getattr(exc, "message", str(exc)), bad=True)
    return redirect("dashboard:webhook", webhook_id=endpoint.id)


def _said(result) -> str:
    if result.succeeded:
        return f"delivered ({result.response_code})."
    return f"failed ({result.response_code or result.error or 'no answer'})."


def _since(text: str) -> datetime | None:
    found = parse_datetime(text.strip()) if text else None
    if found is None:
        return None
    return found if timezone.is_aware(found) else timezone.make_aware(found, UTC)
