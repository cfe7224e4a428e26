# Each of these foreign keys had an index of its own on its one column, and the table an index whose
# leading column is that one (the history's and the pages' lookups): every row written kept a B-tree
# that no lookup needs. Only the indexes are dropped; Django's AlterField of a foreign key would drop and
# re-add the constraint as well, checking every row of the table again.

import django.db.models.deletion
from django.db import migrations, models

# (table, column, the name Django gave the column's own index: the same on PostgreSQL and SQLite)
DROPPED = [
    ('marketplace_allocationsnapshot', 'market_id', 'marketplace_allocationsnapshot_market_id_ccbb635b'),
    ('marketplace_curajob', 'market_id', 'marketplace_curajob_market_id_e70b7fa4'),
    ('marketplace_job', 'market_id', 'marketplace_job_market_id_067d3dd4'),
    ('marketplace_job', 'tenant_id', 'marketplace_job_tenant_id_cc57e20c'),
    ('marketplace_ledgerentry', 'account_id', 'marketplace_ledgerentry_account_id_f27a1c73'),
    ('marketplace_ratesample', 'market_id', 'marketplace_ratesample_market_id_02638d0c'),
    ('marketplace_reservation', 'market_id', 'marketplace_reservation_market_id_014b1eaf'),
    ('marketplace_slurmtask', 'market_id', 'marketplace_slurmtask_market_id_0b93559e'),
    ('marketplace_spotsettlement', 'market_id', 'marketplace_spotsettlement_market_id_23a4d52e'),
    ('marketplace_sharesample', 'job_id', 'marketplace_sharesample_job_id_7846719a'),
]


class Migration(migrations.Migration):

    dependencies = [
        ('marketplace', '0028_binary_lz4'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='allocationsnapshot',
                    name='market',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='snapshots', to='marketplace.market'),
                ),
                migrations.AlterField(
                    model_name='curajob',
                    name='market',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='cura_jobs', to='marketplace.market'),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='market',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='marketplace.market'),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='jobs', to='marketplace.tenant'),
                ),
                migrations.AlterField(
                    model_name='ledgerentry',
                    name='account',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='entries', to='marketplace.account'),
                ),
                migrations.AlterField(
                    model_name='ratesample',
                    name='market',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='rate_samples', to='marketplace.market'),
                ),
                migrations.AlterField(
                    model_name='reservation',
                    name='market',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='reservations', to='marketplace.market'),
                ),
                migrations.AlterField(
                    model_name='sharesample',
                    name='job',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='share_samples', to='marketplace.job'),
                ),
                migrations.AlterField(
                    model_name='slurmtask',
                    name='market',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='slurm_tasks', to='marketplace.market'),
                ),
                migrations.AlterField(
                    model_name='spotsettlement',
                    name='market',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='spot_settlements', to='marketplace.market'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(f'DROP INDEX IF EXISTS "{name}"', reverse_sql=f'CREATE INDEX "{name}" ON "{table}" ("{column}")')
                for table, column, name in DROPPED
            ],
        ),
    ]
