"""`{% reconcile_banner %}`: on every admin page, for staff, the chains whose last reconciliation found a
difference (or could not run) that nobody has resolved. One indexed query of the few open runs."""

from django import template
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from ledger.models import ReconcileRun

register = template.Library()


def open_runs() -> list[ReconcileRun]:
    """The latest unresolved failing run of each chain."""
    runs = ReconcileRun.objects.filter(resolved_at__isnull=True).order_by("-created_at")[:50]
    latest: dict[int, ReconcileRun] = {}
    for run in runs:
        if not run.ok:
            latest.setdefault(run.chain_id, run)
    return sorted(latest.values(), key=lambda run: run.chain_id)


@register.simple_tag(takes_context=True)
def reconcile_banner(context) -> str:
    request = context.get("request")
    if request is None or not getattr(request.user, "is_staff", False):
        return ""
    runs = open_runs()
    if not runs:
        return ""
    items = format_html_join(
        "",
        '<li><a href="{}">chain {}: {}</a></li>',
        (
            (
                reverse("admin:ledger_reconcilerun_change", args=[run.pk]),
                run.chain_id,
                f"could not reconcile ({run.error})"
                if run.error
                else f"{run.differences} difference(s) at block {run.block_number}",
            )
            for run in runs
        ),
    )
    return format_html(
        '<div class="ledger-banner" role="alert"><strong>The ledger and the chains disagree.</strong>'
        "<ul>{}</ul></div>",
        items,
    )
