"""What a log line is about: the request, organization, order and Celery task it was written for.

Held in context variables, so each request's thread (and each task) sees only its own. The request id is
the caller's `X-Request-ID` when it is a short printable token, else one made here; it is returned on the
response and carried into the tasks the request enqueues (`observability.tasks`).
"""

from __future__ import annotations

import re
import secrets
from contextvars import ContextVar

request_id: ContextVar[str] = ContextVar("request_id", default="")
organization_id: ContextVar[str] = ContextVar("organization_id", default="")
order_id: ContextVar[str] = ContextVar("order_id", default="")
task_id: ContextVar[str] = ContextVar("task_id", default="")
# "test" while a request acts for a test-mode organization (a svc_test_ key, the dashboard in test mode):
# on its log lines, and what the chain fields check (platform_api.testmode).
mode: ContextVar[str] = ContextVar("mode", default="")

# Letters, digits and a few separators, up to 128: a UUID, a ULID, a load balancer's trace id. Anything
# else (line breaks, 10 KB, quotes) is not echoed into logs or headers: the request gets an id of its own.
_ACCEPTED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+=-]{0,127}")


def accepted_request_id(offered: str | None) -> str:
    if offered and _ACCEPTED.fullmatch(offered):
        return offered
    return f"req_{secrets.token_hex(12)}"


def current() -> dict[str, str]:
    """The ids set for what runs now (only those set)."""
    found = {
        "request_id": request_id.get(),
        "organization_id": organization_id.get(),
        "order_id": order_id.get(),
        "task_id": task_id.get(),
        "mode": mode.get(),
    }
    return {name: value for name, value in found.items() if value}


def clear() -> None:
    for var in (request_id, organization_id, order_id, task_id, mode):
        var.set("")
