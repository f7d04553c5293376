"""One checkout session (issue 42): the platform's `cs_` session becomes `checkout.CheckoutSession`, and every
session of the order interface (`orders.CheckoutSession`, UUID ids) is copied into it as a row
`created_through="order_interface"`, its status in the one vocabulary (`complete` is `completed`). Orders'
own migration (`orders 0017`) then points each order at its session by id and drops the old table."""

from django.db import migrations, models

import checkout.models

# The order interface said `complete`; the one session says `completed` (the interface still shows `complete`).
STATUS_FORWARD = {"complete": "completed"}


def copy_interface_sessions(apps, schema_editor):
    Old = apps.get_model("orders", "CheckoutSession")
    New = apps.get_model("checkout", "CheckoutSession")
    rows = []
    for old in Old.objects.all().iterator():
        rows.append(
            New(
                id=str(old.id),  # canonical UUID text (SQLite kept 32 hex digits; PostgreSQL a uuid)
                created_through="order_interface",
                organization_id=old.organization_id,
                status=STATUS_FORWARD.get(old.status, old.status),
                success_url=old.success_url or "",
                cancel_url=old.cancel_url or "",
                metadata=old.metadata or {},
                client_reference_id=old.client_reference_id or "",
                expires_at=old.expires_at,
                created_at=old.created_at,
                completed_at=old.completed_at,
                expired_at=old.expired_at,
                updated_at=old.completed_at or old.expired_at or old.created_at,
            )
        )
        if len(rows) >= 500:
            New.objects.bulk_create(rows)
            rows = []
    New.objects.bulk_create(rows)


def drop_interface_sessions(apps, schema_editor):
    """Backwards: `orders 0017` backwards copied them to their own table."""
    apps.get_model("checkout", "CheckoutSession").objects.filter(created_through="order_interface").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("checkout", "0005_dashboard_search_indexes"),
        ("orders", "0016_deposit_refund_flagged_index"),
        ("platform_api", "0019_organization_branding"),
    ]

    operations = [
        migrations.RenameModel("PlatformCheckoutSession", "CheckoutSession"),
        migrations.AlterModelOptions(name="checkoutsession", options={"ordering": ["-created_at"]}),
        migrations.AddField(
            model_name="checkoutsession",
            name="created_through",
            field=models.CharField(
                choices=[("platform", "Platform"), ("order_interface", "Order interface")],
                default="platform",
                help_text="Which interface made it, and so shows it.",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="checkoutsession",
            name="expired_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="checkoutsession",
            name="id",
            field=models.CharField(
                default=checkout.models.new_session_id,
                editable=False,
                max_length=36,
                primary_key=True,
                serialize=False,
            ),
        ),
        migrations.AlterField(
            model_name="checkoutsession",
            name="organization",
            field=models.ForeignKey(
                blank=True,
                help_text="Empty only for an order interface session made without an API key.",
                null=True,
                on_delete=models.deletion.CASCADE,
                related_name="platform_sessions",
                to="platform_api.organization",
            ),
        ),
        migrations.AlterField(
            model_name="checkoutsession", name="token_address", field=models.CharField(blank=True, max_length=42)
        ),
        migrations.AlterField(
            model_name="checkoutsession",
            name="chain_id",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="checkoutsession",
            name="recipient_address",
            field=models.CharField(blank=True, max_length=42),
        ),
        migrations.AlterField(
            model_name="checkoutsession",
            name="client_reference_id",
            field=models.CharField(blank=True, max_length=255),
        ),
        migrations.RunPython(copy_interface_sessions, drop_interface_sessions),
    ]
