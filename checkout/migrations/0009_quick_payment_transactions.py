"""Every quick payment an organization received is a transaction: the rows for those made before this release.

Their status as the quick payment's settlement left it (`completed` once its payout was mined). The customers'
totals and the revenue rollup are not rebuilt here: `manage.py rebuild_revenue` rebuilds the rollup from the
transactions.
"""

from django.db import migrations

from core.ids import public_id


def forwards(apps, schema_editor):
    QuickPayment = apps.get_model("quickpay", "QuickPayment")
    OutboxTx = apps.get_model("chains", "OutboxTx")
    Transaction = apps.get_model("checkout", "Transaction")
    payments = QuickPayment.objects.filter(organization__isnull=False).exclude(amount_received="0")
    for payment in payments.iterator():
        if Transaction.objects.filter(quick_payment_id=payment.id).exists():
            continue
        paid_out = OutboxTx.objects.filter(key=f"quickpay:{payment.id}:payout", status="mined").first()
        status = {"paid": "completed" if paid_out else "confirming", "expired": "failed"}.get(
            payment.status, "pending"
        )
        Transaction.objects.create(
            id=public_id("txn"),
            organization_id=payment.organization_id,
            quick_payment_id=payment.id,
            status=status,
            tx_hash=payment.tx_hash,
            chain_id=payment.chain_id,
            from_address=payment.payer_address,
            to_address=payment.recipient_address,
            token_address=payment.token_address,
            amount=payment.amount,
            source_chain_id=payment.chain_id,
            source_token_address=payment.token_address,
            source_amount=int(payment.amount_received),
            created_at=payment.created_at,
            updated_at=payment.paid_at or payment.created_at,
            completed_at=paid_out.finished_at if paid_out else None,
            form_data={},
            metadata={},
        )


class Migration(migrations.Migration):
    dependencies = [
        ("checkout", "0008_transaction_quick_payment"),
        ("quickpay", "0001_initial"),
        ("chains", "0015_watched_look_back"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
