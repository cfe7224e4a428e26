from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("marketplace", "0013_ledger_adjustments")]

    operations = [
        migrations.AddField(
            model_name="simulationstudy", name="trace_name",
            field=models.CharField(blank=True, default="", max_length=200,
                                   help_text="The trace as the pages show it (a file name, never a server path)."),
        ),
        migrations.AddField(
            model_name="simulationstudy", name="check_status",
            field=models.CharField(blank=True, default="", max_length=10,
                                   choices=[("", "not needed"), ("checking", "checking"), ("passed", "passed"), ("refused", "refused")],
                                   help_text="An uploaded trace's check on a worker (services.uploads); its runs wait for it."),
        ),
        migrations.AddField(
            model_name="simulationstudy", name="check_message", field=models.TextField(blank=True, default=""),
        ),
    ]
