"""The ledger, whole from its first day: every deposit handed over and every finished outbox transaction
recorded before it existed, posted as the observers would have (ledger/backfill.py). Run again, it posts
nothing twice (each posting's key)."""

from django.db import migrations


def backfill(apps, schema_editor):
    from ledger.backfill import Backfill

    run = Backfill(apps)
    run.deposits(apps.get_model("chains", "Deposit"))
    run.outbox(apps.get_model("chains", "OutboxTx"), apps.get_model("chains", "WatchedAddress"))


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0002_chain_blocks_and_reconcile_runs"),
        ("chains", "0010_outbox_gas_price"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
