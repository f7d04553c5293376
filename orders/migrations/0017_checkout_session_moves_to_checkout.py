"""The order interface's checkout sessions live in `checkout.CheckoutSession` now (`checkout 0006` copied every
row): an order names its session by id (`checkout_session_id`, unique: one order per session, as the
one-to-one field held), with no foreign key up to the checkout app, and the old table goes."""

from django.db import migrations, models


def keep_session_ids(apps, schema_editor):
    Order = apps.get_model("orders", "Order")
    for order_id, session_id in Order.objects.filter(checkout_session__isnull=False).values_list(
        "pk", "checkout_session_id"
    ):
        Order.objects.filter(pk=order_id).update(checkout_session_ref=str(session_id))


def restore_sessions(apps, schema_editor):
    """Backwards: the order interface's sessions go back to their table, each order to its session (then
    `checkout 0006` backwards takes them out of the checkout's)."""
    import uuid

    Old = apps.get_model("orders", "CheckoutSession")
    New = apps.get_model("checkout", "CheckoutSession")
    Order = apps.get_model("orders", "Order")
    for new in New.objects.filter(created_through="order_interface").iterator():
        Old.objects.create(
            id=uuid.UUID(new.id),
            organization_id=new.organization_id,
            status={"completed": "complete", "failed": "expired"}.get(new.status, new.status),
            success_url=new.success_url or None,
            cancel_url=new.cancel_url or None,
            metadata=new.metadata,
            client_reference_id=new.client_reference_id or None,
            expires_at=new.expires_at,
            created_at=new.created_at,
            completed_at=new.completed_at,
            expired_at=new.expired_at,
        )
    for order_id, ref in Order.objects.filter(checkout_session_ref__isnull=False).values_list(
        "pk", "checkout_session_ref"
    ):
        Order.objects.filter(pk=order_id).update(checkout_session_id=uuid.UUID(ref))


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0016_deposit_refund_flagged_index"),
        ("checkout", "0006_one_checkout_session"),
    ]

    operations = [
        migrations.AddField(
            model_name="order",
            name="checkout_session_ref",
            field=models.CharField(blank=True, max_length=36, null=True, unique=True),
        ),
        migrations.RunPython(keep_session_ids, restore_sessions),
        migrations.RemoveField(model_name="order", name="checkout_session"),
        migrations.DeleteModel(name="CheckoutSession"),
        migrations.RenameField(model_name="order", old_name="checkout_session_ref", new_name="checkout_session_id"),
        migrations.AlterField(
            model_name="order",
            name="checkout_session_id",
            field=models.CharField(
                blank=True,
                help_text="The order interface's checkout session this order pays (checkout.CheckoutSession; at "
                "most one order each). A platform session's orders are the checkout's SessionOrder rows.",
                max_length=36,
                null=True,
                unique=True,
            ),
        ),
    ]
