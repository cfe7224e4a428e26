"""DRF serializers of bids and jobs (paper 000): shape and type checks only; rules live in ``auction.services``."""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from marketplace.api.fields import MoneyField, StrictDecimalField, StrictJSON, money_format, money_help, money_text
from marketplace.auction.services import MAX_BUDGET, MAX_TASK_DURATION_S, MAX_TASKS
from marketplace.market.models.jobs import Job, JobWork


class WorkItemSerializer(StrictJSON, serializers.Serializer):
    resource_type = serializers.CharField(max_length=40, help_text="Resource type name, e.g. map or reduce.")
    tasks = serializers.IntegerField(min_value=1, max_value=MAX_TASKS,
                                     help_text="Tasks of this type, a count (leave a type without tasks out).")
    task_duration = serializers.FloatField(min_value=0.001, max_value=MAX_TASK_DURATION_S, help_text="Simulated seconds per task.")
    weight = serializers.FloatField(min_value=0, max_value=1e6, default=1.0, help_text="Utility weight w_ij.")


def each_type_once(items: list[dict]) -> list[dict]:
    """The work items, refused (a field error) when a resource type is named twice."""
    names = [item["resource_type"] for item in items]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise serializers.ValidationError(f"Name each resource type once; given twice: {', '.join(twice)}.")
    return items


class BidSerializer(StrictJSON, serializers.Serializer):
    """A bid: budget (money units), utility kind and work per resource type (paper 000, Sec. 3)."""

    name = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")
    budget = StrictDecimalField(max_digits=18, decimal_places=4, min_value=Decimal("0.0001"), max_value=MAX_BUDGET,
                                validators=[money_format(MAX_BUDGET)],
                                help_text=money_help("The most the job may pay; held until it completes. At most 4 decimal places."))
    utility = serializers.ChoiceField(choices=Job.Utility.choices, default=Job.Utility.LINEAR)
    work = WorkItemSerializer(many=True, allow_empty=False)
    job_class = serializers.CharField(max_length=120, required=False, allow_blank=True, default="",
                                      help_text="Job class (default: the name); utility weights are learnt per class.")
    use_adopted_utility = serializers.BooleanField(
        required=False, default=False, help_text="Bid with the weights adopted for the job class (paper 000, Sec. 5).",
    )
    min_utility = serializers.FloatField(
        required=False, allow_null=True, default=None,
        help_text="SLO: minimum utility of the job's average shares; the budget is paid only if it is met (paper 000, Sec. 6).",
    )

    def validate_work(self, items: list[dict]) -> list[dict]:
        return each_type_once(items)


class JobWorkSerializer(serializers.ModelSerializer):
    resource_type = serializers.CharField(source="resource_type.name")

    class Meta:
        model = JobWork
        fields = ("resource_type", "tasks", "task_duration", "weight", "pending", "running", "done")


class SloStatusSerializer(serializers.Serializer):
    """An SLO job's standing (paper 000, Sec. 6); null for a job without an SLO."""

    in_pool = serializers.BooleanField(allow_null=True, help_text="In the prolific pool (null once out of the Plan).")
    predicted_utility = serializers.FloatField(allow_null=True, help_text="Utility its current shares would give.")
    achieved_utility = serializers.FloatField(allow_null=True, help_text="Utility of its average shares, once finished.")
    met = serializers.BooleanField(allow_null=True, help_text="Whether the SLO was met (null while running).")


class JobSerializer(serializers.ModelSerializer):
    queue = serializers.SerializerMethodField(help_text="Dotted path of the job's leaf queue, e.g. root.orga.analytics.")
    work = JobWorkSerializer(many=True, read_only=True)
    shares = serializers.SerializerMethodField(help_text="Within-queue allocation probability per resource type at the latest clearing.")
    budget = MoneyField(help_text="The bid's budget.")
    charged = MoneyField(help_text="What the job has paid so far.")
    held = serializers.SerializerMethodField()
    slo = serializers.SerializerMethodField(
        help_text="SLO jobs: in_pool (prolific pool at the latest clearing), predicted utility, achieved utility, met.",
    )
    slot_seconds = serializers.FloatField(
        read_only=True, allow_null=True,
        help_text="Slot-seconds of work the job was served (its completed tasks), set when it finished or was cancelled "
                  "(null before). charged / slot_seconds is the rate it paid, money per slot-second.",
    )

    class Meta:
        model = Job
        fields = (
            "id", "name", "queue", "budget", "charged", "held", "utility", "status", "sim_submit_time",
            "sim_start_time", "sim_finish_time", "submitted_at", "finished_at", "work", "shares",
            "job_class", "min_utility", "achieved_utility", "slo", "slot_seconds",
        )

    @extend_schema_field(SloStatusSerializer(allow_null=True))
    def get_slo(self, job: Job) -> dict[str, object] | None:
        status = self.context.get("slo", {}).get(job.pk)
        if status is None or status.min_utility is None:
            return None
        return {"in_pool": status.in_pool, "predicted_utility": status.predicted, "achieved_utility": status.achieved,
                "met": status.met}

    def get_queue(self, job: Job) -> str:
        paths = self.context.get("queue_paths")  # one query for the page (market.selectors.queue_paths), not one per job
        return paths[job.queue_id] if paths and job.queue_id in paths else job.queue.path

    def get_shares(self, job: Job) -> dict[str, float]:
        return self.context.get("shares", {}).get(job.pk, {})

    @extend_schema_field(MoneyField(help_text="Amount still held for this job."))
    def get_held(self, job: Job) -> str | None:
        return money_text(self.context.get("money", {}).get(job.pk, (Decimal("0"), Decimal("0")))[0])
