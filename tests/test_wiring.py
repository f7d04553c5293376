"""Every edge up the layers is registered under an enum key, printed by `manage.py wiring`, and shown on the
architecture page as it is."""

from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from chains.handlers import deposit_handler, registrations
from chains.keys import OwnerKind, owner_kind
from config.celery import app
from config.wiring import wiring_markdown
from orders import events


def test_the_architecture_page_shows_the_wiring_as_registered():
    page = (Path(settings.BASE_DIR) / "docs" / "architecture.md").read_text()
    printed = StringIO()
    call_command("wiring", stdout=printed)
    assert printed.getvalue() == wiring_markdown()
    start, end = page.index("<!-- wiring:start -->\n"), page.index("<!-- wiring:end -->")
    assert page[start + len("<!-- wiring:start -->\n") : end] == printed.getvalue()


def test_every_owner_kind_has_its_handlers_and_nothing_else_is_registered():
    tables = registrations()
    assert {kind for kind, _ in tables["deposit handlers"]} == {
        OwnerKind.ORDER,
        OwnerKind.QUICKPAY,
        OwnerKind.REFUND,
    }
    assert {kind for kind, _ in tables["outbox handlers"]} == set(OwnerKind)
    assert owner_kind("quick_payment:qp_1") == owner_kind("quickpay:qp_1:payout") == OwnerKind.QUICKPAY
    assert owner_kind("order:1234") == OwnerKind.ORDER


def test_a_key_outside_the_enums_is_refused():
    with pytest.raises(TypeError):
        deposit_handler("quick_payment")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        events.subscribe(events.Executed, lambda event: None, owner="checkout")  # type: ignore[arg-type]


def test_every_beat_entry_runs_a_task_named_after_its_code():
    app.loader.import_default_modules()
    for entry, options in settings.CELERY_BEAT_SCHEDULE.items():
        task = app.tasks.get(options["task"])
        assert task is not None, entry
        assert options["task"] == f"{task.run.__module__}.{task.run.__name__}", entry
        assert entry.split("-")[0] == options["task"].split(".")[0].replace("platform_api", "platform"), entry


def test_every_registration_is_a_decorator_where_its_handler_is_defined():
    """One style: no app's ready connects or subscribes by hand (only post_migrate, which Django ties to the
    app's own config), and no module calls events.subscribe outside the decorator."""
    base = Path(settings.BASE_DIR)
    for apps_module in base.glob("*/apps.py"):
        text = apps_module.read_text()
        calls = [line.strip() for line in text.splitlines() if ".connect(" in line or "subscribe(" in line]
        assert all(call.startswith("post_migrate.connect(") for call in calls), (apps_module, calls)
    for module in base.glob("*/*.py"):
        if module.parts[-2] in ("tests", "tools") or module.name == "events.py":
            continue
        assert "events.subscribe(" not in module.read_text(), module
