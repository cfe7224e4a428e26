"""One market engine and stored Plans: the engine's state on the market row, the
mechanism by name, one row per clearing with its Plan, a downsampled share history."""

import django.db.models.deletion
from django.db import migrations, models

import scheduler.registry

class Migration(migrations.Migration):
    dependencies = [("marketplace", "0001_initial")]

    operations = [
        migrations.RemoveField(model_name="market", name="cluster_state"),
        migrations.AddField(model_name="market", name="engine_state", field=models.JSONField(blank=True, default=dict)),
        migrations.AddField(model_name="market", name="engine_version", field=models.BigIntegerField(default=0)),
        migrations.AddField(
            model_name="market", name="structure_version",
            field=models.BigIntegerField(default=0, help_text="Changes whenever the queue tree or a resource type changes."),
        ),
        migrations.AddField(
            model_name="market", name="mechanism",
            field=models.CharField(choices=scheduler.registry.mechanism_choices, default="abacus", help_text="Mechanism within a queue.", max_length=30),
        ),
        migrations.AlterField(
            model_name="market", name="fairshare_policy",
            field=models.CharField(choices=scheduler.registry.fairshare_choices, default="hltrf", help_text="Fair-share policy across queues.", max_length=10),
        ),
        migrations.AlterField(
            model_name="market", name="dispatch_mode",
            field=models.CharField(choices=scheduler.registry.dispatch_choices, default="stride", help_text="Which job of a leaf queue gets a free unit.", max_length=10),
        ),
        migrations.RenameField(model_name="allocationsnapshot", old_name="policy", new_name="mechanism"),
        migrations.AddField(
            model_name="allocationsnapshot", name="plan",
            field=models.BinaryField(blank=True, help_text="scheduler.plan.Plan.to_bytes()", null=True),
        ),
        migrations.AddField(model_name="allocationsnapshot", name="max_kkt_residual", field=models.FloatField(default=0.0)),
        migrations.DeleteModel(name="JobShare"),
        migrations.CreateModel(
            name="ShareSample",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("sim_time", models.FloatField()),
                ("shares", models.JSONField(help_text="Share per resource type, in resource-type order (stage, id).")),
                ("job", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="share_samples", to="marketplace.job")),
                ("market", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="share_samples", to="marketplace.market")),
            ],
            options={"ordering": ["sim_time", "id"], "indexes": [models.Index(fields=["job", "sim_time"], name="marketplace_job_id_f9e0cf_idx")]},
        ),
    ]
