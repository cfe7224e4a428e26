"""DRF serializers: shape and type checks only; rules live in services."""

from __future__ import annotations

import math
from decimal import Decimal

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

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
    budget = serializers.DecimalField(max_digits=18, decimal_places=4, min_value=Decimal("0.0001"), max_value=MAX_BUDGET)
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


class JobSerializer(serializers.ModelSerializer):
    queue = serializers.CharField(source="queue.path", read_only=True)
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

    def get_slo(self, job: Job) -> dict[str, object] | None:
        status = self.context.get("slo", {}).get(job.pk)
        if status is None or status.min_utility is None:
            return None
        return {"in_pool": status.in_pool, "predicted_utility": status.predicted, "achieved_utility": status.achieved,
                "met": status.met}

    def get_shares(self, job: Job) -> dict[str, float]:
        return self.context.get("shares", {}).get(job.pk, {})

    def get_held(self, job: Job) -> str:
        return str(self.context.get("money", {}).get(job.pk, (Decimal("0"), Decimal("0")))[0])


class LedgerEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = LedgerEntry
        fields = ("id", "kind", "amount", "available_delta", "held_delta", "available_after", "held_after", "job", "memo", "created_at")


class FairnessSampleSerializer(serializers.ModelSerializer):
    queue = serializers.CharField(source="queue.path")
    resource_type = serializers.CharField(source="resource_type.name")

    class Meta:
        model = FairnessSample
        fields = ("sim_time", "queue", "resource_type", "usage", "share", "demand", "entitled", "rho", "running")


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


class AccountSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    available = serializers.DecimalField(max_digits=18, decimal_places=4)
    held = serializers.DecimalField(max_digits=18, decimal_places=4)


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
    resources = serializers.ListField(child=serializers.DictField())
    prices = serializers.DictField(child=serializers.FloatField())
    last_clearing = serializers.DictField(allow_null=True)


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
