"""No app's modules import each other in a cycle (issue 65: there were 7), and every task queued by name
(core.tasks.Later) is one Celery has registered."""

from __future__ import annotations

import sys

import grimp
import pytest

from core.tasks import declared_tasks

APPS = [
    "core", "observability", "chains", "platform_api", "audit", "webhooks", "orders", "quickpay", "merchant",
    "checkout", "refunds", "onramp", "dashboard", "config", "ledger", "facilitator",
]  # fmt: skip


def cycles(modules: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles(["a", "b", "c"], {"a": ["b"], "b": ["a"], "c": ["a"]}) == [["a", "b"]]


@pytest.mark.parametrize("app", APPS)
def test_no_modules_of_an_app_import_each_other_in_a_cycle(app):
    graph = grimp.build_graph(app, include_external_packages=False)
    modules = [m for m in graph.modules if m != app and ".migrations" not in m]
    assert modules
    edges = {
        m: [t for t in graph.find_modules_directly_imported_by(m) if t in modules] for m in modules
    }  # every import, at the top or in a function (a package's own __init__ aside)
    assert cycles(modules, edges) == []


def test_every_task_queued_by_name_is_registered():
    """Found by its name whether or not the process imported its app's tasks (a thread of the suite had not)."""
    assert declared_tasks()
    for later in declared_tasks():
        assert later.task.name == later.name
