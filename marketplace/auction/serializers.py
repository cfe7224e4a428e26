"""DRF serializers of bids and jobs (paper 000): shape and type checks only; rules live in ``auction.services``."""

from __future__ import annotations

import math
import re
from decimal import Context, Decimal
from functools import lru_cache
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from marketplace.api.fields import MoneyField, StrictDecimalField, StrictJSON, money_format, money_help, money_pattern, money_text
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


_BID_KEYS = frozenset({"name", "budget", "utility", "work", "job_class", "use_adopted_utility", "min_utility"})
_WORK_KEYS = frozenset({"resource_type", "tasks", "task_duration", "weight"})
_BUDGET = re.compile(money_pattern(MAX_BUDGET))
_PLACES = Decimal(1).scaleb(-4)
_PRECISION = Context(prec=18)
_UTILITIES = frozenset(Job.Utility.values)


@lru_cache(maxsize=1)
def _defaults() -> dict[str, Any]:
    fields = BidSerializer().fields
    return {name: fields[name].get_default() for name in ("name", "utility", "job_class", "use_adopted_utility", "min_utility")}


def _plain_text(value: object, max_length: int) -> str | None:
    """A CharField's value for plain ASCII text without NUL (stripped, at most ``max_length``), else None."""
    if type(value) is not str or not value.isascii() or "\x00" in value:
        return None
    text = value.strip()
    return text if len(text) <= max_length else None


def _plain_number(value: object, low: float, high: float) -> float | None:
    """A FloatField's value for a JSON number from ``low`` to ``high``, else None."""
    if type(value) is not float and type(value) is not int:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except OverflowError:
        return None
    return number if math.isfinite(number) and low <= number <= high else None


def plain_bid(data: object) -> dict[str, Any] | None:
    """``BidSerializer(data=data).validated_data`` for a bid in the shape nearly every client sends
    (known keys, ASCII text, the budget as a money string, work items with an int task count), without
    the serializer's walk over its fields; None for anything else, valid or not: the serializer judges
    it (and names its errors). Same values and types as the serializer's, defaults included."""
    if type(data) is not dict or not data.keys() <= _BID_KEYS:
        return None
    budget = data.get("budget")
    if type(budget) is not str or not _BUDGET.fullmatch(budget):
        return None
    amount = Decimal(budget).quantize(_PLACES, context=_PRECISION)
    if not _BUDGET.fullmatch(str(amount)):
        return None
    out = dict(_defaults())
    for name in ("name", "job_class"):
        if name in data:
            text = _plain_text(data[name], 120)
            if text is None:
                return None
            out[name] = text
    if "utility" in data:
        if type(data["utility"]) is not str or data["utility"] not in _UTILITIES:
            return None
        out["utility"] = data["utility"]
    if "use_adopted_utility" in data:
        if type(data["use_adopted_utility"]) is not bool:
            return None
        out["use_adopted_utility"] = data["use_adopted_utility"]
    if data.get("min_utility") is not None:
        floor = _plain_number(data["min_utility"], -math.inf, math.inf)
        if floor is None:
            return None
        out["min_utility"] = floor
    work = _plain_work(data.get("work"))
    if work is None:
        return None
    out["budget"] = amount
    out["work"] = work
    return out


def _plain_work(items: object) -> list[dict[str, Any]] | None:
    if type(items) is not list or not items:
        return None
    out = []
    for item in items:
        if type(item) is not dict or not item.keys() <= _WORK_KEYS:
            return None
        name = _plain_text(item.get("resource_type"), 40)
        tasks = item.get("tasks")
        duration = _plain_number(item.get("task_duration"), 0.001, MAX_TASK_DURATION_S)
        weight = _plain_number(item["weight"], 0.0, 1e6) if "weight" in item else 1.0
        if not name or type(tasks) is not int or not 1 <= tasks <= MAX_TASKS or duration is None or weight is None:
            return None
        out.append({"resource_type": name, "tasks": tasks, "task_duration": duration, "weight": weight})
    if len({w["resource_type"] for w in out}) < len(out):
        return None  # a type named twice: the serializer's error
    return out


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
