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


def encrypt_fields(app_label: str, model_name: str, fields: dict) -> list:
    """Operations that turn plaintext fields of a model into encrypted ones, keeping every value: each new
    field is added beside the old one under a temporary name, every row is copied across (written
    encrypted), the old field is dropped and the new one takes its name."""
    temporary = {name: f"{name}_encrypted" for name in fields}

    def copy(apps, schema_editor):
        model = apps.get_model(app_label, model_name)
        batch = []
        for row in model.objects.only("pk", *fields).iterator(chunk_size=500):
            for name in fields:
                setattr(row, temporary[name], getattr(row, name))
            batch.append(row)
            if len(batch) == 500:
                model.objects.bulk_update(batch, list(temporary.values()))
                batch = []
        if batch:
            model.objects.bulk_update(batch, list(temporary.values()))

    return [
        *(migrations.AddField(model_name, temporary[name], field) for name, field in fields.items()),
        migrations.RunPython(copy, migrations.RunPython.noop),
        *(migrations.RemoveField(model_name, name) for name in fields),
        *(migrations.RenameField(model_name, temporary[name], name) for name in fields),
    ]
