"""Forms that make something once: each form carries a one-time token, and its first submit records what it
made in the session, so that a second submit of the same form (a double click, a reload) finds that instead
of making another."""

from __future__ import annotations

import secrets

from django.http import HttpRequest

SESSION_KEY = "dashboard_form_tokens"  # form token -> the id of what its first submit made
KEPT = 50


def new_form_token() -> str:
    return secrets.token_urlsafe(16)


def made_before(request: HttpRequest) -> str | None:
    """The id of what this form's first submit made, if it was submitted before."""
    token = request.POST.get("form_token", "")
    return request.session.get(SESSION_KEY, {}).get(token) if token else None


def remember(request: HttpRequest, made_id: str) -> None:
    token = request.POST.get("form_token", "")
    if token:
        made = request.session.get(SESSION_KEY, {})
        made[token] = made_id
        request.session[SESSION_KEY] = dict(list(made.items())[-KEPT:])
