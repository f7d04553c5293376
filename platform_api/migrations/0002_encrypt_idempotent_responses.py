from django.db import migrations, models


def encrypt_stored_responses(apps, schema_editor):
    """Responses stored before this migration are encrypted, so replays keep working."""
    from core.crypto import encrypt_json

    Record = apps.get_model("platform_api", "IdempotencyRecord")
    for record in Record.objects.exclude(response_body=None).iterator():
        record.response_body_encrypted = encrypt_json(record.response_body, purpose="idempotency")
        record.save(update_fields=["response_body_encrypted"])


class Migration(migrations.Migration):
    dependencies = [
        ("platform_api", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="idempotencyrecord",
            name="response_body_encrypted",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(encrypt_stored_responses, migrations.RunPython.noop),
        migrations.RemoveField(model_name="idempotencyrecord", name="response_body"),
    ]
