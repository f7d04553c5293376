from django.db import migrations, models


def link_orders_are_owned_by_the_checkout(apps, schema_editor):
    Order = apps.get_model("orders", "Order")
    Order.objects.filter(platform_session__isnull=False).update(owner="checkout", fixed_price=True)


class Migration(migrations.Migration):
    dependencies = [("orders", "0012_refund_addresses")]

    operations = [
        migrations.AddField(
            model_name="order",
            name="owner",
            field=models.CharField(
                blank=True,
                default="",
                help_text="The app that created the order and follows its events (orders.events): "
                "'checkout' for a payment link's or platform session's order, empty for the order interface's.",
                max_length=32,
            ),
        ),
        migrations.AddField(
            model_name="order",
            name="fixed_price",
            field=models.BooleanField(
                default=False,
                help_text="What arrives beyond srcAmount goes back to the payer (a merchant's price).",
            ),
        ),
        migrations.RunPython(link_orders_are_owned_by_the_checkout, migrations.RunPython.noop),
    ]
