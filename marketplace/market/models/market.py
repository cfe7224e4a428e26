"""The market: its configuration, its clock and its clearing bookkeeping."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q

from marketplace.infra.locking import NoKeyLockManager
from scheduler.registry import dispatch_choices, fairshare_choices, history_choices, mechanism_choices


class Market(models.Model):
    """One market (one shared cluster) and the knobs administrators tune.

    ``state_version`` rises with every change that a clearing must see
    (arrival, departure, cancellation, a configuration change); a clearing
    computed on an older version is dropped. ``engine_state`` is the
    serialised ``simulator.market.engine.MarketEngine`` of the live market and
    ``engine_version`` changes each time it is stored (a process that holds
    the engine of that version in memory skips reading it).
    ``structure_version`` changes with the queue tree and the resource types
    (``services.market.structure_changed``), keying the same kind of copy.

    The three stage names come from ``scheduler.registry`` (each name is
    defined there once): ``mechanism`` within a queue, ``fairshare_policy``
    across queues, ``dispatch_mode`` inside a leaf.
    """

    name = models.CharField(max_length=100, unique=True)
    alpha = models.FloatField(
        default=0.5, help_text="Auction exponent in [0, 1]: 0 = equal shares, 1 = proportional to money (paper 000, Sec. 3)."
    )
    t_wait = models.FloatField(default=30.0, help_text="Starvation timeout T_wait in simulated seconds (paper 002, Sec. 5.2.2).")
    auction_tolerance = models.FloatField(default=1e-6, help_text="Relative change of sub-budgets at which the auction stops.")
    auction_max_rounds = models.PositiveIntegerField(default=1000)
    clock_speed = models.FloatField(default=60.0, help_text="Simulated seconds per wall-clock second of the live cluster clock.")
    mechanism = models.CharField(max_length=30, choices=mechanism_choices, default="abacus", help_text="Mechanism within a queue.")
    fairshare_policy = models.CharField(
        max_length=10, choices=fairshare_choices, default="hltrf", help_text="Fair-share policy across queues."
    )
    dispatch_mode = models.CharField(
        max_length=10, choices=dispatch_choices, default="stride", help_text="Which job of a leaf queue gets a free unit."
    )
    fairshare_history = models.CharField(
        max_length=10, choices=history_choices, default="forever",
        help_text="How much past usage fair share remembers: forever, rounds of L seconds, or exponential decay (paper 002, Sec. 6.2.2).",
    )
    fairshare_history_length = models.FloatField(
        default=3600.0, help_text="Round length L or decay half-life, simulated seconds (unused with 'forever')."
    )
    part_arguments = models.JSONField(
        default=dict, blank=True,
        help_text="Each part's own settings by part name (market.hooks.MarketPart.arguments): a new part needs no column.",
    )
    parts_in_use = models.JSONField(
        default=list, blank=True,
        help_text="Names of the parts (market.hooks) that have held rows of this market; a part that is idle until "
                  "used (MarketPart.idle_until_used) costs the clock and the clearing nothing until it is named here.",
    )
    state_version = models.BigIntegerField(default=0)
    cleared_version = models.BigIntegerField(default=-1)
    clearing_lease_until = models.DateTimeField(null=True, blank=True)
    sim_time = models.FloatField(default=0.0, help_text="Simulated seconds since the market opened.")
    clock_wall_at = models.DateTimeField(null=True, blank=True, help_text="Wall time of the last live clock tick.")
    engine_state = models.JSONField(default=dict, blank=True)
    engine_version = models.BigIntegerField(default=0)
    structure_version = models.BigIntegerField(default=0, help_text="Changes whenever the queue tree or a resource type changes.")
    clearings = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = NoKeyLockManager()  # row locks: FOR NO KEY UPDATE (infra.locking)

    class Meta:
        constraints = (
            models.CheckConstraint(condition=Q(alpha__gte=0) & Q(alpha__lte=1), name="market_alpha_in_unit_interval"),
            models.CheckConstraint(condition=Q(t_wait__gte=0), name="market_t_wait_non_negative"),
            models.CheckConstraint(condition=Q(clock_speed__gt=0), name="market_clock_speed_positive"),
            models.CheckConstraint(condition=Q(auction_tolerance__gt=0), name="market_tolerance_positive"),
            models.CheckConstraint(condition=Q(fairshare_history_length__gt=0), name="market_history_length_positive"),
        )

    def __str__(self) -> str:
        return self.name


class ConfigChange(models.Model):
    """Audit trail of parameter changes: who changed what, from what, to what."""

    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="config_changes")
    field = models.CharField(max_length=100)
    old_value = models.TextField(blank=True)
    new_value = models.TextField(blank=True)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    changed_at = models.DateTimeField(auto_now_add=True)
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.field}: {self.old_value} -> {self.new_value}"


class EngineJob(models.Model):
    """One job's record of the stored market engine (``simulator.market.delta``: its cluster counters,
    spec, bid and payment rule), written only by a store whose tick changed it. ``job_id`` is not a
    foreign key: the engine keeps its own books (docs/engine.md)."""

    # no index of its own: the unique constraint below leads with it
    market = models.ForeignKey(Market, on_delete=models.CASCADE, related_name="+", db_index=False)
    job_id = models.BigIntegerField()
    state = models.JSONField()

    class Meta:
        constraints = (models.UniqueConstraint(fields=["market", "job_id"], name="engine_job_unique"),)

    def __str__(self) -> str:
        return f"engine record of job {self.job_id}"


class EngineColumns(models.Model):
    """The stored market engine's packed columns (``simulator.market.delta``: shares, sub-budgets,
    share integrals, dispatch credits, one float64 array each), rewritten by every store."""

    market = models.OneToOneField(Market, on_delete=models.CASCADE, primary_key=True, related_name="+")
    data = models.BinaryField(default=b"")

    def __str__(self) -> str:
        return f"engine columns of market {self.market_id}"
