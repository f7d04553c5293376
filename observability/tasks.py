"""The request id from a request into the tasks it enqueues, and each task's ids into its log lines.

`before_task_publish` puts the publisher's request id in the message's headers; `task_prerun` sets it,
the task's id and an `order_id` argument (the settlement's tasks take one) for the task's lines, and
`task_postrun` clears them for the next task of the same process or thread.
"""

from __future__ import annotations

import inspect
import os
from typing import cast

from celery.signals import (
    before_task_publish,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_process_shutdown,
)

from observability import context

HEADER = "checkout_request_id"


@before_task_publish.connect
def _carry_request_id(headers=None, **_):
    rid = context.request_id.get()
    if rid and isinstance(headers, dict):
        headers.setdefault(HEADER, rid)


@task_prerun.connect
def _task_started(task_id=None, task=None, kwargs=None, args=None, **_):
    request = getattr(task, "request", None)
    rid = getattr(request, HEADER, None) or (getattr(request, "headers", None) or {}).get(HEADER) or ""
    context.request_id.set(rid if rid and context.accepted_request_id(rid) == rid else "")
    context.task_id.set(task_id or "")
    order = (kwargs or {}).get("order_id")
    position = _order_position(task)
    if order is None and position is not None and args and len(args) > position:
        order = args[position]
    context.order_id.set(str(order)[:64] if order else "")


def _order_position(task) -> int | None:
    """Where a task takes `order_id` among its positional arguments (the settlement's tasks do)."""
    if task is None:
        return None
    try:
        return cast(int | None, task.__dict__["_order_position"])
    except KeyError:
        try:
            names = list(inspect.signature(task.run).parameters)
        except (TypeError, ValueError):
            names = []
        position = names.index("order_id") if "order_id" in names else None
        task.__dict__["_order_position"] = position
        return position


@task_postrun.connect
def _task_finished(**_):
    context.clear()


@worker_process_shutdown.connect
def _pool_process_exited(pid=None, **_):
    from observability.multiprocess import process_exited

    if pid:
        process_exited(pid)


# Read from the environment, as the setting is: this module is imported with `config` (config/celery.py),
# before manage.py has chosen its settings, so it must not load them.
if os.environ.get("LOG_FORMAT", "").strip().lower() == "json":

    @setup_logging.connect
    def _keep_django_logging(**_):
        """Celery's own log set-up would replace the JSON lines with its text; Django's LOGGING stays."""
