# The token registry moves from orders to chains (the platform's quick pay needs it, and may not import
# orders). The table is kept and renamed; nothing is copied.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('chains', '0002_deposit_unhandled_index'),
        ('orders', '0003_deposit_block_token_and_refund_flags'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Token',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('chain_id', models.PositiveBigIntegerField()),
                        ('address', models.CharField(help_text='EIP-55 checksummed; the zero address is the native asset.', max_length=42)),
                        ('symbol', models.CharField(max_length=32)),
                        ('name', models.CharField(max_length=100)),
                        ('decimals', models.PositiveSmallIntegerField()),
                        ('logo_uri', models.URLField(blank=True, max_length=500)),
                        ('usd_price', models.DecimalField(blank=True, decimal_places=10, help_text='Reference price used by the offline quoter.', max_digits=30, null=True)),
                    ],
                    options={
                        'db_table': 'orders_token',
                        'ordering': ['chain_id', 'symbol'],
                        'indexes': [models.Index(fields=['chain_id', 'symbol'], name='token_chain_symbol')],
                        'constraints': [models.UniqueConstraint(fields=('chain_id', 'address'), name='token_chain_address')],
                    },
                ),
            ],
        ),
        migrations.AlterModelTable(name='token', table=None),
    ]
