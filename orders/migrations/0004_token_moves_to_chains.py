# The token registry now lives in chains (chains 0003 takes over the table); orders only forgets it.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('orders', '0003_deposit_block_token_and_refund_flags'),
        ('chains', '0003_token'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name='Token')]),
    ]
