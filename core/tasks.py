"""A task of an app's own `tasks` module, queued from the modules those tasks call, without importing it.

An app's `tasks` module imports its services and settlement to run them; when those queue one of its tasks in
turn, importing it would close a cycle (`services -> tasks -> services`). `Later("app.tasks.name")` names the
task instead and finds it in the Celery app's registry when it is queued: the same task object, so its routing,
its eager mode in tests and its retries are unchanged. Every name declared is checked against the registry by
a test (`declared_tasks`), so a misspelt one fails the suite, not a payment.

    SETTLE = Later("quickpay.tasks.settle_quick_payment")
    transaction.on_commit(lambda: SETTLE.delay(payment_id))
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

_declared: list[Later] = []


@dataclass(frozen=True)
class Later:
    name: str  # the task's registered name: its module and function, as Celery names a shared task

    def __post_init__(self) -> None:
        _declared.append(self)

    @property
    def task(self) -> Any:
        from celery import current_app

        if self.name not in current_app.tasks:  # a process that has not imported the app's tasks yet
            import_module(self.name.rpartition(".")[0])
        return current_app.tasks[self.name]

    def delay(self, *args: Any, **kwargs: Any) -> Any:
        return self.task.delay(*args, **kwargs)

    def apply_async(self, *args: Any, **kwargs: Any) -> Any:
        return self.task.apply_async(*args, **kwargs)


def declared_tasks() -> list[Later]:
    return list(_declared)
