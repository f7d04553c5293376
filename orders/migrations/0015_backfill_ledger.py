"""The ledger's business postings for what was recorded before it: the fees of executed orders, card
payments and their refunds (orders/accounting.py). The chains' own postings come first (ledger 0003)."""

from django.db import migrations


def backfill(apps, schema_editor):
    from ledger.backfill import Backfill
    from orders.accounting import backfill as orders_backfill

    orders_backfill(apps, Backfill(apps))


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0014_remove_order_platform_session"),
        ("ledger", "0003_backfill_chains"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
