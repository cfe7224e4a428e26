"""DRF serializers of the market's state: allocation, time series, the last clearing, settings and the
account. Shape and type checks only; rules live in services."""

from __future__ import annotations

import math

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.functional import lazy
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from marketplace.api.fields import MoneyField, StrictJSON, currency
from marketplace.ledger.models import LedgerEntry
from marketplace.market.models.allocation import FairnessSample, MarketSample, PriceSample, RateSample
from marketplace.market.services.config import parse_t_wait
from scheduler.registry import dispatch_choices, fairshare_choices, history_choices, mechanism_choices


class LedgerEntrySerializer(serializers.ModelSerializer):
    """One ledger entry; ``created_at`` is wall-clock time (UTC), not simulated time."""

    amount = MoneyField(help_text="The movement (always positive; the deltas carry the sign).")
    available_delta = MoneyField(help_text="Change of the available balance.")
    held_delta = MoneyField(help_text="Change of the held balance.")
    available_after = MoneyField(help_text="Available balance after this entry.")
    held_after = MoneyField(help_text="Held balance after this entry.")
    created_at = serializers.DateTimeField(read_only=True, help_text="Wall-clock time of the entry (ISO 8601, UTC).")

    class Meta:
        model = LedgerEntry
        fields = ("id", "kind", "amount", "available_delta", "held_delta", "available_after", "held_after", "job", "memo", "created_at")


SIM_TIME_HELP = "Simulated seconds since the market opened (market clock, not wall time)."


def _price_help() -> str:
    return (f"Implied unit price, {currency()} per slot: the sub-budgets bidding for this resource type divided by "
            "its capacity in slots (Abacus, paper 000; scheduler.abacus.auction.implied_prices). A rate, not an amount: a JSON number.")


price_help = lazy(_price_help, str)


class FairnessSampleSerializer(serializers.ModelSerializer):
    """A leaf queue's fairness on one resource type at a simulated time (paper 002, Eqs. 1-5)."""

    sim_time = serializers.FloatField(help_text=SIM_TIME_HELP)
    usage = serializers.FloatField(help_text="Accumulated usage f_i, resource-seconds (slot-seconds).")
    share = serializers.FloatField(help_text="Fair share S_i, slots.")
    demand = serializers.FloatField(help_text="Current demand d_i, slots.")
    entitled = serializers.FloatField(help_text="Integral of min(d_i, S_i), slot-seconds.")
    rho = serializers.FloatField(allow_null=True, help_text="Fairness degree f_i / entitled, dimensionless; null where infinite.")
    running = serializers.IntegerField(help_text="Slots held now.")
    queue = serializers.SerializerMethodField(help_text="Dotted path of the leaf queue.")
    resource_type = serializers.CharField(source="resource_type.name")

    class Meta:
        model = FairnessSample
        fields = ("sim_time", "queue", "resource_type", "usage", "share", "demand", "entitled", "rho", "running")

    def get_queue(self, sample: FairnessSample) -> str:
        paths = self.context.get("queue_paths")  # one query per page, not one per row
        return paths[sample.queue_id] if paths and sample.queue_id in paths else sample.queue.path


class MarketSampleSerializer(serializers.ModelSerializer):
    sim_time = serializers.FloatField(help_text=SIM_TIME_HELP)
    benefit = serializers.FloatField(help_text="Sharing benefit Psi = sum of max(rho - 1, 0), dimensionless (paper 002).")
    loss = serializers.FloatField(help_text="Sharing loss Omega = sum of min(rho - 1, 0), dimensionless (paper 002).")
    utilisation = serializers.FloatField(help_text="Running slots / capacity, a fraction from 0 to 1.")
    active_jobs = serializers.IntegerField(help_text="Jobs queued or running, a count.")
    resource_type = serializers.CharField(source="resource_type.name")

    class Meta:
        model = MarketSample
        fields = ("sim_time", "resource_type", "benefit", "loss", "utilisation", "active_jobs")


class PriceSampleSerializer(serializers.ModelSerializer):
    sim_time = serializers.FloatField(help_text=SIM_TIME_HELP)
    price = serializers.FloatField(help_text=price_help())
    resource_type = serializers.CharField(source="resource_type.name")
    snapshot = serializers.IntegerField(source="snapshot_id", help_text="Id of the clearing that set the price.")

    class Meta:
        model = PriceSample
        fields = ("sim_time", "resource_type", "price", "snapshot")


class RateSampleSerializer(serializers.ModelSerializer):
    """What auction jobs that left the market paid for what they used on one type, pooled over at least
    three tenants (no row is one tenant's payment)."""

    sim_time = serializers.FloatField(help_text=SIM_TIME_HELP)
    resource_type = serializers.CharField(source="resource_type.name")
    charged = serializers.FloatField(help_text="Their charges attributed to this type (split by slot-seconds used), money.")
    slot_seconds = serializers.FloatField(help_text="Slot-seconds of this type they used (completed tasks).")
    jobs = serializers.IntegerField(help_text="Jobs that finished or were cancelled, a count.")
    tenants = serializers.IntegerField(help_text="Distinct tenants pooled in the row (at least MARKET_RATE_MIN_TENANTS, 3).")
    utilisation = serializers.FloatField(help_text="Busy slots / capacity of the type then, 0 to 1 (the level of demand).")
    rate = serializers.SerializerMethodField(help_text="charged / slot_seconds: the realised rate, money per slot-second.")

    class Meta:
        model = RateSample
        fields = ("sim_time", "resource_type", "charged", "slot_seconds", "jobs", "tenants", "utilisation", "rate")

    def get_rate(self, sample: RateSample) -> float:
        return sample.charged / sample.slot_seconds if sample.slot_seconds > 0 else 0.0


class SpotSerializer(serializers.Serializer):
    """The spot auction's prices, money per slot-second (docs/economy.md, "One unit of price")."""

    unit = serializers.CharField(help_text='The unit of every price here, e.g. "credits per slot-second".')
    realised_rate = serializers.DictField(child=serializers.FloatField(allow_null=True), help_text=(
        "Per resource type: what auction jobs paid per slot-second they used over the last day of simulated time, from "
        "the published rows (each pooled from at least 3 tenants; null: nothing published yet)."))
    price_level = serializers.FloatField(help_text=(
        "The reference rule over every type at once: the median of one vote per tenant that bought slots in contention "
        "over the last day and one for MARKET_REFERENCE_RATE, never below the reserve prices: what a tenant's money is "
        "sized by."))
    reference_rate = serializers.DictField(child=serializers.FloatField(), help_text=(
        "Per resource type: the reference rate quotes are anchored to, the median of one vote per tenant that bought "
        "the type's slots in contention over the last day and one for MARKET_REFERENCE_RATE, never below its reserve "
        "price; one tenant moves it at most to the other votes next to their median (docs/economy.md)."))
    reserve_price = serializers.DictField(child=serializers.FloatField(), help_text=(
        "Per resource type: the least a slot-second sells for, set by staff."))


class AllocationEntrySerializer(serializers.Serializer):
    job_id = serializers.IntegerField()
    tenant = serializers.CharField()
    queue = serializers.CharField(help_text="Dotted path of the job's leaf queue.")
    status = serializers.CharField()
    running = serializers.DictField(child=serializers.IntegerField(), help_text="Slots held now per resource type.")
    pending = serializers.DictField(child=serializers.IntegerField(), help_text="Tasks waiting per resource type, a count.")
    shares = serializers.DictField(child=serializers.FloatField(),
                                   help_text="Within-queue allocation probability per resource type, 0 to 1.")


class QueueTotalsSerializer(serializers.Serializer):
    """Public per-queue totals over every tenant's active jobs (no job ids or names)."""

    queue = serializers.CharField(help_text="Dotted path of the leaf queue.")
    jobs = serializers.IntegerField(help_text="Active jobs in the queue, a count.")
    running = serializers.DictField(child=serializers.IntegerField(), help_text="Slots held now per resource type.")
    pending = serializers.DictField(child=serializers.IntegerField(), help_text="Tasks waiting per resource type, a count.")


class AllocationSerializer(serializers.Serializer):
    """What ``GET /api/market/allocation/`` returns: the clock and versions, the jobs the
    caller may see (every active job for staff and cluster managers, the caller's own for a
    tenant) and the public per-queue totals."""

    sim_time = serializers.FloatField(help_text=SIM_TIME_HELP)
    state_version = serializers.IntegerField()
    cleared_version = serializers.IntegerField()
    snapshot = serializers.IntegerField(allow_null=True, help_text="Id of the newest stored clearing (null before the first).")
    scope = serializers.ChoiceField(choices=["all", "own"],
                                    help_text='"all": every tenant\'s jobs (staff, cluster managers); "own": the caller\'s.')
    jobs = AllocationEntrySerializer(many=True)
    queues = QueueTotalsSerializer(many=True)


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
    params = serializers.DictField(help_text=(
        "The parameters this clearing used (every settings change reaches the next clearing): mechanism, alpha, "
        "auction_tolerance, auction_max_rounds, fairshare_policy, t_wait (simulated s; null = off), fairshare_history, "
        "fairshare_history_length (simulated s), dispatch_mode, capacity (slots per resource type, in stage order)."))


class AccountSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    currency = serializers.CharField(help_text="The currency of every amount (settings.MARKET_CURRENCY).")
    available = MoneyField(help_text="Balance free for new bids.")
    held = MoneyField(help_text="Balance held for active bids.")


@extend_schema_field({"oneOf": [{"type": "number", "minimum": 0}, {"type": "string", "enum": ["off"]}],
                     "description": 'Seconds >= 0, or "off" (no starvation timeout).'})
class TWaitField(serializers.Field):  # type: ignore[type-arg]
    """T_wait: a number of seconds >= 0, or "off" (math.inf inside; paper 002 Theorem 1).
    An overflowing number (1e309 parses to inf) is an error, not "off"."""

    def to_internal_value(self, data: object) -> float:
        if isinstance(data, bool) or not isinstance(data, (int, float, str)) or (isinstance(data, str) and data != "off"):
            raise serializers.ValidationError('Enter a number of seconds or "off".')  # JSON: a number, or the string "off"
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
    prices = serializers.DictField(child=serializers.FloatField(), help_text=(
        "Abacus' implied price per resource type at the last clearing (sub-budgets / capacity, money per slot): the "
        "auction's internal quantity; spot gives the market's prices per slot-second."))
    spot = SpotSerializer(help_text="The spot market's prices in the market's one unit, money per slot-second.")
    last_clearing = LastClearingSerializer(allow_null=True)


class MarketConfigSerializer(StrictJSON, serializers.Serializer):
    """Staff changes to the market's stages and knobs (all optional; audited by ``market_configure``).

    Stage names are checked against their registry here, so an unknown name is a
    field error of this request, never a failure at clearing time.
    """

    alpha = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
    t_wait = TWaitField(required=False, help_text='Seconds >= 0 (0 = LTRF), or "off" for no starvation timeout (the naive hierarchy).')
    fairshare_history = serializers.ChoiceField(required=False, choices=history_choices())
    fairshare_history_length = serializers.FloatField(required=False, min_value=0.0)  # > 0: exclusive (api.schema.EXCLUSIVE)

    mechanism = serializers.ChoiceField(required=False, choices=mechanism_choices())
    fairshare_policy = serializers.ChoiceField(required=False, choices=fairshare_choices())
    dispatch_mode = serializers.ChoiceField(required=False, choices=dispatch_choices())
    # The ranges of market.services.config (the schema states them; the service checks them).
    clock_speed = serializers.FloatField(required=False, min_value=0.0, max_value=1e6)  # > 0
    auction_tolerance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)  # (0, 1)
    auction_max_rounds = serializers.IntegerField(required=False, min_value=1, max_value=100_000)
    reserve_prices = serializers.DictField(
        child=serializers.FloatField(min_value=0.0, max_value=1e6), required=False,
        help_text="Resource type name -> its reserve price, credits per slot-second: below it no bid is served and no quote "
                  "prices (docs/economy.md).")
    reason = serializers.CharField(required=False, max_length=200, allow_blank=True)
