from django.db import migrations


class Migration(migrations.Migration):
    """The session-to-order link now lives on the checkout's side (checkout.SessionOrder, copied there)."""

    dependencies = [
        ("orders", "0013_order_owner_fixed_price"),
        ("checkout", "0001_initial"),
    ]

    operations = [migrations.RemoveField(model_name="order", name="platform_session")]
