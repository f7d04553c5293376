"""Every status column has a declared state machine (core.machines), every status is written through one, and
the architecture page shows them all as `manage.py states` prints them."""

from __future__ import annotations

import ast
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.core.management import call_command

from config.states import MACHINES, states_markdown
from core.machines import ForbiddenTransition, Machine

ROOT = Path(settings.BASE_DIR)


def _status_columns() -> dict[str, list[str]]:
    columns = {}
    for model in apps.get_models():  # proxies (the admin's StuckOrder) share their concrete model's column
        if model._meta.proxy:
            continue
        field = next((f for f in model._meta.concrete_fields if f.name == "status" and f.choices), None)
        if field is not None and model.__module__.split(".")[0] in {p.name for p in ROOT.iterdir()}:
            columns[f"{model._meta.app_label}.{model.__name__}.status"] = [
                value for value, _ in field.choices
            ]
    return columns


def test_every_status_column_has_a_machine_of_exactly_its_statuses():
    declared = {machine.column: sorted(machine.statuses) for machine in MACHINES}
    assert declared == {column: sorted(statuses) for column, statuses in _status_columns().items()}


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.column)
def test_every_status_is_reachable_from_where_a_row_starts(machine: Machine):
    reached, frontier = set(machine.initial), list(machine.initial)
    while frontier:
        for target in machine.moves[frontier.pop()]:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(machine.statuses)


def _status_writes(tree: ast.AST) -> list[int]:
    """The lines of `tree` that set a `status` column by hand: `.update(status=…)`, `x.status = …`, or a
    `"status"` key of a dict that an update spreads."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update":
            if any(k.arg == "status" for k in node.keywords):
                lines.append(node.lineno)
        elif isinstance(node, ast.Assign):
            targets = [e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
            if any(isinstance(t, ast.Attribute) and t.attr == "status" for t in targets):
                lines.append(node.lineno)
    return lines


# What assigns an attribute called `status` that is no model's column: an error's HTTP status, an envelope's.
NOT_A_COLUMN = {
    "core/machines.py",
    "platform_api/errors.py",
    "orders/envelope.py",
    "cli/checkout_cli/service.py",
}


def test_no_status_is_written_outside_its_machine():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if (
            relative.split("/")[0] in {".venv", "tests", "tools", "node_modules"}
            or "/migrations/" in relative
        ):
            continue
        if relative in NOT_A_COLUMN:
            continue
        found += [f"{relative}:{line}" for line in _status_writes(ast.parse(path.read_text()))]
    assert found == []


def test_the_checker_finds_a_status_written_by_hand():
    written = ast.parse("Refund.objects.filter(pk=1).update(status='failed')\nrow.status = 'paid'\n")
    assert sorted(_status_writes(written)) == [1, 2]


def test_a_move_the_machine_does_not_list_is_refused_before_anything_is_written():
    from refunds.states import REFUND

    with pytest.raises(ForbiddenTransition):
        REFUND.check("succeeded", "pending")
    with pytest.raises(ForbiddenTransition):
        REFUND.check("unheard_of", "pending")
    REFUND.check("pending", "pending")  # staying is no move: an update of the row's other fields
    assert REFUND.sources("canceled") == ["requires_funding"]


@pytest.mark.django_db
def test_a_move_is_one_conditional_update_that_moves_only_rows_in_a_status_it_names():
    from quickpay.models import QuickPayment
    from quickpay.states import QUICK_PAYMENT
    from tests.factories import QuickPaymentFactory

    waiting, paid = QuickPaymentFactory(), QuickPaymentFactory(status=QuickPayment.Status.PAID)
    moved = QUICK_PAYMENT.move(QuickPayment.objects.filter(pk__in=[waiting.pk, paid.pk]), to="expired")
    assert moved == 1
    assert {p.pk: p.status for p in QuickPayment.objects.all()} == {waiting.pk: "expired", paid.pk: "paid"}
    with pytest.raises(ForbiddenTransition):
        QUICK_PAYMENT.move(QuickPayment.objects.all(), from_=("paid",), to="awaiting_payment")
    assert QuickPayment.objects.get(pk=paid.pk).status == "paid"


def test_the_architecture_page_shows_every_machine_as_declared():
    printed = StringIO()
    call_command("states", stdout=printed)
    assert printed.getvalue() == states_markdown()
    page = (ROOT / "docs" / "architecture.md").read_text()
    start, end = page.index("<!-- states:start -->\n"), page.index("<!-- states:end -->")
    assert page[start + len("<!-- states:start -->\n") : end] == printed.getvalue()
