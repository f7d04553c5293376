"""Migration helpers shared by apps."""

from __future__ import annotations

from decimal import Decimal

from django.db import migrations

from core.dbfields import UINT256_DIGITS


def pad_uint256_on_sqlite(*columns: tuple[str, str]) -> migrations.RunPython:
    """Rewrite (table, column) amounts that SQLite kept as numbers into Uint256Field's padded text."""

    def forwards(apps, schema_editor):
        connection = schema_editor.connection
        if connection.vendor == "postgresql":
            return
        with connection.cursor() as cursor:
            for table, column in columns:  # names from the migration itself, never from input
                t, c = connection.ops.quote_name(table), connection.ops.quote_name(column)
                cursor.execute(f"SELECT rowid, {c} FROM {t} WHERE {c} IS NOT NULL")  # noqa: S608
                for rowid, value in cursor.fetchall():
                    padded = str(int(Decimal(str(value)))).zfill(UINT256_DIGITS)
                    cursor.execute(f"UPDATE {t} SET {c} = %s WHERE rowid = %s", [padded, rowid])  # noqa: S608

    return migrations.RunPython(forwards, migrations.RunPython.noop)
