# Cura's link from ledger entries to Cura jobs moves from the ledger's table to one owned by pools/
# (the ledger names no part): create the link table, copy the links, then drop the column. Reversible.

from collections import defaultdict

import django.db.models.deletion
from django.db import migrations, models


def links_forward(apps, schema_editor):
    LedgerEntry = apps.get_model("marketplace", "LedgerEntry")
    CuraLedgerLink = apps.get_model("marketplace", "CuraLedgerLink")
    linked = LedgerEntry.objects.filter(cura_job__isnull=False).values_list("pk", "cura_job_id").iterator(chunk_size=2000)
    batch = []
    for entry_id, cura_job_id in linked:
        batch.append(CuraLedgerLink(entry_id=entry_id, cura_job_id=cura_job_id))
        if len(batch) >= 2000:
            CuraLedgerLink.objects.bulk_create(batch)
            batch = []
    CuraLedgerLink.objects.bulk_create(batch)


def links_back(apps, schema_editor):
    LedgerEntry = apps.get_model("marketplace", "LedgerEntry")
    CuraLedgerLink = apps.get_model("marketplace", "CuraLedgerLink")
    by_job = defaultdict(list)
    for entry_id, cura_job_id in CuraLedgerLink.objects.values_list("entry_id", "cura_job_id").iterator(chunk_size=2000):
        by_job[cura_job_id].append(entry_id)
    for cura_job_id, entry_ids in by_job.items():  # an UPDATE, not save(): the entries stay as they were
        LedgerEntry.objects.filter(pk__in=entry_ids).update(cura_job_id=cura_job_id)


class Migration(migrations.Migration):

    dependencies = [
        ('marketplace', '0018_slurm'),
    ]

    operations = [
        migrations.CreateModel(
            name='CuraLedgerLink',
            fields=[
                ('entry', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='cura_link', serialize=False, to='marketplace.ledgerentry')),
                ('cura_job', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='ledger_links', to='marketplace.curajob')),
            ],
        ),
        migrations.RunPython(links_forward, links_back),
        migrations.RemoveField(
            model_name='ledgerentry',
            name='cura_job',
        ),
    ]
