"""Every edge up the layers, read from where it is registered: what `manage.py wiring` prints.

Lower apps never import upper ones; an upper app registers with a lower app's registry in its
`AppConfig.ready`. This module reads each registry once every app is ready, so the list is what runs, not
what someone remembered to write down. `docs/architecture.md` includes the output; a test keeps them equal.
"""

from __future__ import annotations

import importlib
import re
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.signals import setting_changed
from django.db.models.signals import post_delete, post_migrate, post_save
from django.dispatch import Signal

from chains.families import FAMILIES
from chains.handlers import registrations
from observability.collector import metric_sources
from orders.events import binders, subscriptions
from orders.onramps import get_onramp_adapter
from orders.types import TYPES
from platform_api.audit_names import AuditName
from webhooks.kinds import EmailKind, EventType
from webhooks.notifications import SUBJECTS
from webhooks.payloads import CALLBACKS

PROJECT: tuple[str, ...] = (
    *("core", "chains", "platform_api", "ledger", "merchant", "audit", "orders", "quickpay", "webhooks"),
    *("checkout", "onramp", "dashboard", "config"),
)

DJANGO_SIGNALS: dict[str, Signal] = {
    "django post_save": post_save,
    "django post_delete": post_delete,
    "django post_migrate": post_migrate,
    "django setting_changed": setting_changed,
}


def _signals() -> dict[str, Signal]:
    """Every signal an app declares in its `signals` module, found there (a new one cannot be left out), and
    the Django signals the apps receive."""
    found: dict[str, Signal] = {}
    for config in apps.get_app_configs():
        if not config.name.startswith(PROJECT):
            continue
        try:
            module = importlib.import_module(f"{config.name}.signals")
        except ModuleNotFoundError:
            continue
        for name, value in sorted(vars(module).items()):
            if isinstance(value, Signal):
                found[f"{config.name}.signals.{name}"] = value
    return found | DJANGO_SIGNALS


def _name(function: Callable[..., Any]) -> str:
    return f"`{function.__module__}.{getattr(function, '__qualname__', type(function).__qualname__)}`"


def _table(header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _senders() -> dict[int, str]:
    named: dict[int, str] = {id(model): f"{model._meta.label}" for model in apps.get_models()}
    named.update({id(config): f"app {config.label}" for config in apps.get_app_configs()})
    return named


def _signal_rows() -> list[tuple[str, str, str]]:
    senders = _senders()
    rows = []
    for name, signal in _signals().items():
        for entry in signal.receivers:
            (_receiver_id, sender_id), reference = entry[0], entry[1]
            receiver = reference() if isinstance(reference, weakref.ReferenceType) else reference
            if receiver is None or not receiver.__module__.startswith(PROJECT):
                continue
            sender = "any" if sender_id == id(None) else senders.get(sender_id, "another")
            rows.append((f"`{name}`", sender, _name(receiver)))
    return sorted(rows)


def _beat_rows() -> list[tuple[str, str, str]]:
    from config.celery import app

    app.loader.import_default_modules()  # every app's tasks module, as a worker does at start
    tasks = app.tasks
    rows = []
    for entry, options in sorted(settings.CELERY_BEAT_SCHEDULE.items()):
        task = tasks.get(options["task"])
        code = _name(task.run) if task is not None else "**not registered**"
        rows.append((f"`{entry}`", f"`{options['task']}`", code))
    return rows


def _event_rows() -> list[tuple[str, ...]]:
    documented = {callback.name for callback in CALLBACKS}
    return [
        (
            f"`{event}`",
            "documented" if event in documented else "**none**",
            f"{SUBJECTS[event]!r}" if event in SUBJECTS else "**none**",
        )
        for event in EventType
    ]


def audit_recorders() -> dict[AuditName, list[str]]:
    """For each audit name, the service's modules that record it (that name its member)."""
    found: dict[AuditName, list[str]] = {name: [] for name in AuditName}
    root = settings.BASE_DIR
    for app in sorted({config.name.split(".")[0] for config in apps.get_app_configs()}):
        folder = root / app
        if not (folder / "apps.py").exists():
            continue
        for path in sorted(folder.rglob("*.py")):
            if "migrations" in path.parts or path.name == "audit_names.py":
                continue
            text = path.read_text()
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            named = set(re.findall(r"\bAuditName\.([A-Z_]+)\b", text))
            for name in AuditName:
                if name.name in named:
                    found[name].append(module)
    return found


def _audit_rows() -> list[tuple[str, ...]]:
    return [
        (f"`{name}`", ", ".join(f"`{module}`" for module in modules) or "**nowhere**")
        for name, modules in audit_recorders().items()
    ]


def wiring_markdown() -> str:
    """The registrations as Markdown tables, in a stable order."""
    lines = ["#### Chains: deposits and outbox transactions by owner kind (`chains.handlers`)", ""]
    handler_rows = [
        (table, f"`{kind}`", _name(handler))
        for table, entries in registrations().items()
        for kind, handler in entries
    ]
    lines += _table(("registry", "kind", "handler"), handler_rows)
    lines += ["", "#### Orders: lifecycle events by owner (`orders.events`, in the order they run)", ""]
    lines += _table(
        ("event", "owner", "subscriber"),
        [(f"`{event}`", f"`{owner}`", _name(handler)) for event, owner, handler in subscriptions()],
    )
    lines += ["", "#### Signals and their receivers", ""]
    lines += _table(("signal", "sender", "receiver"), _signal_rows())
    lines += ["", "#### Other registries", ""]
    other = [("`orders.onramps.onramp_adapter`", "order creation", _name(type(get_onramp_adapter())))]
    other += [
        ("`orders.events.session_binder`", "`checkoutSessionId`", _name(binder)) for binder in binders()
    ]
    other += [
        ("`observability.collector.metric_source`", "`/metrics`", _name(source))
        for source in metric_sources()
    ]
    other += [
        ("`chains.families.FAMILIES`", f"`{name}`", _name(type(family))) for name, family in FAMILIES.items()
    ]
    other += [
        ("`orders.types.TYPES`", f"`{name}`", f"`{kind.family}`: `{kind.payload.__module__}`")
        for name, kind in TYPES.items()
    ]
    lines += _table(("registry", "key", "registered"), other)
    lines += ["", "#### Webhook events (`webhooks.kinds.EventType`): body and notification subject", ""]
    lines += _table(("event", "body (OpenAPI callback)", "email subject"), _event_rows())
    lines += ["", "#### Other emails (`webhooks.kinds.EmailKind`)", ""]
    lines += _table(("kind", "name"), [(f"`{kind}`", f"`EmailKind.{kind.name}`") for kind in EmailKind])
    lines += ["", "#### Audit event names (`platform_api.audit_names.AuditName`) and who records them", ""]
    lines += _table(("name", "recorded in"), _audit_rows())
    lines += ["", "#### Beat: periodic tasks and the code they run", ""]
    lines += _table(("entry", "task", "code"), _beat_rows())
    return "\n".join(lines) + "\n"
