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
        # labels: plain words beside the symbols; a charge is not always on completion
        migrations.AlterField(
            model_name="adoptedutility",
            name="utility",
            field=models.CharField(choices=[("linear", "Linear: value grows in proportion to the shares (sum w_j s_j)"), ("log", "Log-scale: diminishing returns, the first share counts most (sum w_j log s_j)")], max_length=10),
        ),
        migrations.AlterField(
            model_name="job",
            name="utility",
            field=models.CharField(choices=[("linear", "Linear: value grows in proportion to the shares (sum w_j s_j)"), ("log", "Log-scale: diminishing returns, the first share counts most (sum w_j log s_j)")], default="linear", max_length=10),
        ),
        migrations.AlterField(
            model_name="ledgerentry",
            name="kind",
            field=models.CharField(choices=[("deposit", "Deposit"), ("hold", "Hold for a bid"), ("charge", "Charge"), ("release", "Release of a hold"), ("credit", "Credit by staff"), ("debit", "Debit by staff")], max_length=10),
        ),
    ]
