"""The languages of the payer's pages and emails: English (the source) and one catalog per other language.

A language is one file: `locale/<code>/LC_MESSAGES/django.po`. It is offered once that file exists
(`LANGUAGES` is read from the folder at start-up), and compiled to the `.mo` file Django reads by
`manage.py compile_catalogs` (polib, no GNU gettext needed), which `make run` and
`make test` run. docs/operations.md says how to add one.
"""

from __future__ import annotations

from pathlib import Path

from django.conf.locale import LANG_INFO

SOURCE_LANGUAGE = ("en", "English")


def locale_dir(base: Path) -> Path:
    return base / "locale"


def catalogs(base: Path) -> dict[str, Path]:
    """{language code: its .po file}, for each language that has one."""
    root = locale_dir(base)
    return {path.parent.parent.name: path for path in sorted(root.glob("*/LC_MESSAGES/django.po"))}


def available_languages(base: Path) -> list[tuple[str, str]]:
    """English, then every language with a catalog, each named in its own language (`Español`)."""
    languages = [SOURCE_LANGUAGE]
    for code in catalogs(base):
        name = LANG_INFO.get(code.lower().replace("_", "-"), {}).get("name_local", code)
        languages.append((code.lower().replace("_", "-"), name[:1].upper() + name[1:]))
    return languages


def compile_catalogs(base: Path, *, force: bool = False) -> list[Path]:
    """Write each catalog's `.mo` beside it where it is missing or older than its `.po`; the ones written."""
    import polib

    written = []
    for po_path in catalogs(base).values():
        mo_path = po_path.with_suffix(".mo")
        if force or not mo_path.exists() or mo_path.stat().st_mtime < po_path.stat().st_mtime:
            polib.pofile(str(po_path)).save_as_mofile(str(mo_path))
            written.append(mo_path)
    return written
