"""The index of docs/decisions/: one line per topic, its title and its status line. `manage.py decisions`
prints it; docs/decisions.md is that output, kept equal by a test."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

HEADER = """# Decisions

Decisions taken where the interface contract and the design are silent, and why: one file per topic in
[decisions/](decisions/), in the order the service grew, newest at the bottom of each. Each says whether it is
in force or what superseded it. What the code says itself is not repeated there: the apps' layers and public
surfaces (`pyproject.toml`, import-linter), every registration between apps (`manage.py wiring`) and every
state machine (`manage.py states`) are rendered in [architecture.md](architecture.md); the settings are in
[configuration.md](configuration.md). This index is the output of `manage.py decisions`.

| topic | status |
|---|---|
"""


def decision_files() -> list[Path]:
    return sorted((Path(settings.BASE_DIR) / "docs" / "decisions").glob("*.md"))


def _title_and_status(path: Path) -> tuple[str, str]:
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ValueError(f"{path.name} does not start with its title")
    status = next((line for line in lines[1:6] if line.startswith("Status: ")), None)
    if status is None:
        raise ValueError(f"{path.name} has no status line (Status: in force, or what superseded it)")
    return lines[0][2:], status.removeprefix("Status: ").rstrip(".")


def decisions_index() -> str:
    rows = []
    for path in decision_files():
        title, status = _title_and_status(path)
        # A status's links are relative to decisions/: from the index, they are under it.
        status = status.replace("](", "](decisions/")
        rows.append(f"| [{title}](decisions/{path.name}) | {status} |")
    return HEADER + "\n".join(rows) + "\n"
