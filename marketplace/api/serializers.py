"""DRF serializers: shape and type checks only; rules live in services."""

from __future__ import annotations

import math
from decimal import Decimal

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from marketplace.api.fields import StrictDecimalField
from marketplace.models import FairnessSample, Job, JobWork, LedgerEntry, MarketSample, PriceSample
from marketplace.services.bids import MAX_BUDGET, MAX_TASK_DURATION_S, MAX_TASKS
from marketplace.services.config import parse_t_wait
from scheduler.registry import dispatch_choices, fairshare_choices, history_choices, mechanism_choices


class WorkItemSerializer(serializers.Serializer):
    resource_type = serializers.CharField(max_length=40, help_text="Resource type name, e.g. map or reduce.")
    tasks = serializers.IntegerField(min_value=0, max_value=MAX_TASKS)
    task_duration = serializers.FloatField(min_value=0.001, max_value=MAX_TASK_DURATION_S, help_text="Simulated seconds per task.")
    weight = serializers.FloatField(min_value=0, max_value=1e6, default=1.0, help_text="Utility weight w_ij.")


class BidSerializer(serializers.Serializer):
    """A bid: budget (money units), utility kind and work per resource type (paper 000, Sec. 3)."""

    name = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")
    budget = StrictDecimalField(max_digits=18, decimal_places=4, min_value=Decimal("0.0001"), max_value=MAX_BUDGET)
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
    held = serializers.SerializerMethodField(help_text="Amount still held for this job.")
    slo = serializers.SerializerMethodField(
        help_text="SLO jobs: in_pool (prolific pool at the latest clearing), predicted utility, achieved utility, met.",
    )

    class Meta:
        model = Job
        fields = (
            "id", "name", "queue", "budget", "charged", "held", "utility", "status", "sim_submit_time",
            "sim_start_time", "sim_finish_time", "submitted_at", "finished_at", "work", "shares",
            "job_class", "min_utility", "achieved_utility", "slo",
        )

    @extend_schema_field(SloStatusSerializer(allow_null=True))
    def get_slo(self, job: Job) -> dict[str, object] | None:
        status = self.context.get("slo", {}).get(job.pk)
        if status is None or status.min_utility is None:
            return None
        return {"in_pool": status.in_pool, "predicted_utility": status.predicted, "achieved_utility": status.achieved,
                "met": status.met}

    def get_queue(self, job: Job) -> str:
        paths = self.context.get("queue_paths")  # one query for the page (selectors.queue_paths), not one per job
        return paths[job.queue_id] if paths and job.queue_id in paths else job.queue.path

    def get_shares(self, job: Job) -> dict[str, float]:
        return self.context.get("shares", {}).get(job.pk, {})

    def get_held(self, job: Job) -> str:
        return str(self.context.get("money", {}).get(job.pk, (Decimal("0"), Decimal("0")))[0])


class LedgerEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = LedgerEntry
        fields = ("id", "kind", "amount", "available_delta", "held_delta", "available_after", "held_after", "job", "memo", "created_at")


class FairnessSampleSerializer(serializers.ModelSerializer):
    queue = serializers.SerializerMethodField(help_text="Dotted path of the leaf queue.")
    resource_type = serializers.CharField(source="resource_type.name")

    class Meta:
        model = FairnessSample
        fields = ("sim_time", "queue", "resource_type", "usage", "share", "demand", "entitled", "rho", "running")

    def get_queue(self, sample: FairnessSample) -> str:
        paths = self.context.get("queue_paths")  # one query per page, not one per row
        return paths[sample.queue_id] if paths and sample.queue_id in paths else sample.queue.path


class MarketSampleSerializer(serializers.ModelSerializer):
    resource_type = serializers.CharField(source="resource_type.name")

    class Meta:
        model = MarketSample
        fields = ("sim_time", "resource_type", "benefit", "loss", "utilisation", "active_jobs")


class PriceSampleSerializer(serializers.ModelSerializer):
    resource_type = serializers.CharField(source="resource_type.name")
    snapshot = serializers.IntegerField(source="snapshot_id")

    class Meta:
        model = PriceSample
        fields = ("sim_time", "resource_type", "price", "snapshot")


class AllocationEntrySerializer(serializers.Serializer):
    job_id = serializers.IntegerField()
    tenant = serializers.CharField()
    queue = serializers.CharField()
    status = serializers.CharField()
    running = serializers.DictField(child=serializers.IntegerField(), help_text="Units held now per resource type.")
    pending = serializers.DictField(child=serializers.IntegerField(), help_text="Tasks waiting per resource type.")
    shares = serializers.DictField(child=serializers.FloatField(), help_text="Within-queue shares per resource type.")


class AllocationSerializer(serializers.Serializer):
    """What ``GET /api/market/allocation/`` returns: the clock and versions, and one entry per active job."""

    sim_time = serializers.FloatField(help_text="Simulated seconds since the market opened.")
    state_version = serializers.IntegerField()
    cleared_version = serializers.IntegerField()
    snapshot = serializers.IntegerField(allow_null=True, help_text="Id of the newest stored clearing (null before the first).")
    jobs = AllocationEntrySerializer(many=True)


class ResourceStateSerializer(serializers.Serializer):
    name = serializers.CharField()
    capacity = serializers.IntegerField()
    running = serializers.IntegerField()
    utilisation = serializers.FloatField(help_text="running / capacity.")


class LastClearingSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state_version = serializers.IntegerField()
    sim_time = serializers.FloatField()
    rounds = serializers.IntegerField()
    converged = serializers.BooleanField()
    n_jobs = serializers.IntegerField()
    solve_ms = serializers.FloatField()
    total_ms = serializers.FloatField(allow_null=True)


class AccountSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    available = serializers.DecimalField(max_digits=18, decimal_places=4)
    held = serializers.DecimalField(max_digits=18, decimal_places=4)


@extend_schema_field({"oneOf": [{"type": "number", "minimum": 0}, {"type": "string", "enum": ["off"]}],
                     "description": 'Seconds >= 0, or "off" (no starvation timeout).'})
class TWaitField(serializers.Field):  # type: ignore[type-arg]
    """T_wait: a number of seconds >= 0, or "off" (math.inf inside; paper 002 Theorem 1).
    An overflowing number (1e309 parses to inf) is an error, not "off"."""

    def to_internal_value(self, data: object) -> float:
        if isinstance(data, bool) or not isinstance(data, (int, float, str)):
            raise serializers.ValidationError('Enter a number of seconds or "off".')
        if isinstance(data, float) and not math.isfinite(data):
            raise serializers.ValidationError(
                f'{data} is not a finite number of seconds (too large for a float); to disable the timeout send "off".'
            )
        try:
            return parse_t_wait(data)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict["t_wait"]) from None

    def to_representation(self, value: float | str) -> float | str:
        return "off" if value in (math.inf, "off") else float(value)


class MarketStateSerializer(serializers.Serializer):
    market = serializers.CharField()
    sim_time = serializers.FloatField()
    state_version = serializers.IntegerField()
    cleared_version = serializers.IntegerField()
    clearings = serializers.IntegerField()
    alpha = serializers.FloatField()
    t_wait = TWaitField(help_text='Starvation timeout T_wait in simulated seconds, or "off" (no timeout).')
    fairshare_history = serializers.CharField(help_text="forever, rounds or decay (paper 002, Sec. 6.2.2).")
    fairshare_history_length = serializers.FloatField(help_text="Round length L or decay half-life, simulated seconds.")
    mechanism = serializers.CharField(help_text="Mechanism within a queue (scheduler.registry.MECHANISMS).")
    fairshare_policy = serializers.CharField(help_text="Fair-share policy across queues (scheduler.registry.FAIRSHARE).")
    dispatch_mode = serializers.CharField(help_text="Dispatch inside a queue (scheduler.registry.DISPATCH).")
    clock_speed = serializers.FloatField()
    jobs = serializers.DictField(child=serializers.IntegerField())
    resources = ResourceStateSerializer(many=True)
    prices = serializers.DictField(child=serializers.FloatField())
    last_clearing = LastClearingSerializer(allow_null=True)


class MarketConfigSerializer(serializers.Serializer):
    """Staff changes to the market's stages and knobs (all optional; audited by ``market_configure``).

    Stage names are checked against their registry here, so an unknown name is a
    field error of this request, never a failure at clearing time.
    """

    alpha = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
    t_wait = TWaitField(required=False, help_text='Seconds >= 0 (0 = LTRF), or "off" for no starvation timeout (the naive hierarchy).')
    fairshare_history = serializers.ChoiceField(required=False, choices=history_choices())
    fairshare_history_length = serializers.FloatField(required=False, min_value=0.0)

    mechanism = serializers.ChoiceField(required=False, choices=mechanism_choices())
    fairshare_policy = serializers.ChoiceField(required=False, choices=fairshare_choices())
    dispatch_mode = serializers.ChoiceField(required=False, choices=dispatch_choices())
    clock_speed = serializers.FloatField(required=False)
    auction_tolerance = serializers.FloatField(required=False)
    auction_max_rounds = serializers.IntegerField(required=False)
    reason = serializers.CharField(required=False, max_length=200, allow_blank=True)
