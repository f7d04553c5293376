"""The decisions are one file per topic, each with its title and status line, and docs/decisions.md is their
index as `manage.py decisions` prints it."""

from io import StringIO
from pathlib import Path

from django.conf import settings
from django.core.management import call_command

from config.decisions import decision_files

DOCS = Path(settings.BASE_DIR) / "docs"


def test_the_index_is_what_the_command_prints():
    printed = StringIO()
    call_command("decisions", stdout=printed)
    assert (DOCS / "decisions.md").read_text() == printed.getvalue()


def test_every_topic_has_a_title_a_status_and_links_that_resolve():
    assert len(decision_files()) >= 40
    for path in decision_files():
        lines = path.read_text().splitlines()
        assert lines[0].startswith("# ") and lines[2].startswith("Status: "), path.name
        for target in __import__("re").findall(r"\]\(([^)#:]+\.md)", path.read_text()):
            assert (path.parent / target).resolve().exists(), f"{path.name} links to {target}"
