import django.db.models.deletion
from django.db import migrations, models


def copy_session_links(apps, schema_editor):
    """Each order's `platform_session` becomes a SessionOrder (the link moves to the checkout's side)."""
    Order = apps.get_model("orders", "Order")
    SessionOrder = apps.get_model("checkout", "SessionOrder")
    rows = Order.objects.filter(platform_session__isnull=False).values_list("pk", "platform_session_id", "created_at")
    batch = []
    for order_id, session_id, created_at in rows.iterator(chunk_size=2000):
        batch.append(SessionOrder(order_id=order_id, session_id=session_id, created_at=created_at))
        if len(batch) >= 2000:
            SessionOrder.objects.bulk_create(batch)
            batch = []
    SessionOrder.objects.bulk_create(batch)


def copy_back(apps, schema_editor):
    Order = apps.get_model("orders", "Order")
    SessionOrder = apps.get_model("checkout", "SessionOrder")
    for link in SessionOrder.objects.all().iterator(chunk_size=2000):
        Order.objects.filter(pk=link.order_id).update(platform_session_id=link.session_id)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("orders", "0013_order_owner_fixed_price"),
        ("platform_api", "0016_encrypt_personal_data"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionOrder",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "order",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT, related_name="session_order", to="orders.order"
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="session_orders",
                        to="platform_api.platformcheckoutsession",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["session", "created_at"], name="checkout_session_order_latest")],
            },
        ),
        migrations.RunPython(copy_session_links, copy_back),
    ]
